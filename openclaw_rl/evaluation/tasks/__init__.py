"""Evaluation tasks: ``conversation`` (simulated users), ``coding`` (HumanEval), ``tool-use`` (BFCL),
and the Track 2 agent families ``math-tool`` (ReTool-style math), ``terminal`` (AgentBench OS) and
``gui`` (MiniWoB++ web tasks)."""

from __future__ import annotations

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
    elif name in AGENT_TASKS:
        from openclaw_rl.agentic.families import eval_task
        task = eval_task(name)
    else:
        raise ValueError(f"unknown eval task {name!r}; choose from {', '.join(TASK_NAMES)}")
    if max_tokens:
        task.max_tokens = max_tokens
    return task


#: the Track 2 agent families' held-out episodes (:mod:`openclaw_rl.evaluation.tasks.agentic`)
AGENT_TASKS = ("math-tool", "terminal", "swe", "gui")
#: what ``--eval-tasks`` runs when not given (the agent tasks need the sandbox: name them)
DEFAULT_TASKS = ("conversation", "coding", "tool-use")
TASK_NAMES = DEFAULT_TASKS + AGENT_TASKS

__all__ = ["AGENT_TASKS", "DEFAULT_TASKS", "TASK_NAMES", "Task", "make_task"]
