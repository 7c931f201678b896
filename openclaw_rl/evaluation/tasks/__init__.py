"""Evaluation tasks: ``conversation`` (simulated users), ``coding`` (HumanEval), ``tool-use`` (BFCL),
and every registered Track 2 agent family (:mod:`openclaw_rl.agentic.family`: ``math-tool``
(ReTool-style math), ``terminal`` (AgentBench OS), ``swe`` (repository repair), ``gui`` (MiniWoB++
web tasks)), each by its name or an alias."""

from __future__ import annotations

from openclaw_rl.agentic.family import UnknownFamilyError, family_names, get_family
from openclaw_rl.evaluation.tasks.agentic import AgentTask
from openclaw_rl.evaluation.tasks.base import Task


def make_task(name: str, **options) -> Task:
    """The task called ``name`` (one of :data:`TASK_NAMES`).

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
        try:
            task = AgentTask(get_family(name))
        except UnknownFamilyError:
            raise ValueError(f"unknown eval task {name!r}; choose from {', '.join(task_names())}") from None
    if max_tokens:
        task.max_tokens = max_tokens
    return task


#: what ``--eval-tasks`` runs when not given (the agent tasks need the sandbox: name them)
DEFAULT_TASKS = ("conversation", "coding", "tool-use")


def task_names() -> tuple[str, ...]:
    """Every ``--eval-tasks`` name: :data:`DEFAULT_TASKS`, then the registered agent families."""
    return DEFAULT_TASKS + tuple(family_names())


__all__ = ["DEFAULT_TASKS", "Task", "make_task", "task_names"]
