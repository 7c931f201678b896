"""Evaluation tasks: ``conversation`` (simulated users), ``coding`` (HumanEval), ``tool-use`` (BFCL)."""

from __future__ import annotations

from openclaw_rl.evaluation.tasks.base import Task


def make_task(name: str, **options) -> Task:
    """The task called ``name`` (``conversation``, ``coding`` or ``tool-use``).

    Args:
        options: ``user_llm_url``, ``user_llm_model``, ``user_llm_key`` (conversation only) and
            ``max_tokens`` (all; None: the task's default).

    Raises:
        ValueError: unknown task name.
    """
    from openclaw_rl.evaluation.tasks.coding import CodingTask
    from openclaw_rl.evaluation.tasks.conversation import ConversationTask
    from openclaw_rl.evaluation.tasks.tool_use import ToolUseTask

    max_tokens = options.pop("max_tokens", None)
    if name == "conversation":
        task: Task = ConversationTask(**options)
    elif name == "coding":
        task = CodingTask()
    elif name == "tool-use":
        task = ToolUseTask()
    else:
        raise ValueError(f"unknown eval task {name!r}; choose from {', '.join(TASK_NAMES)}")
    if max_tokens:
        task.max_tokens = max_tokens
    return task


TASK_NAMES = ("conversation", "coding", "tool-use")

__all__ = ["TASK_NAMES", "Task", "make_task"]
