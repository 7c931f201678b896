"""Agent tasks (every registered agent family: ``math-tool``, ``terminal``, ``swe``, ``gui``):
held-out episodes of a Track 2 family.

Each item is one held-out task of the family's evaluation split; the episode runs the same code as
training: the family's task setup (:meth:`~openclaw_rl.agentic.family.AgentFamily.prepare_task`,
with the evaluated model's path, so a vision-language policy gets the GUI screenshots as images)
and its :meth:`~openclaw_rl.agentic.family.AgentFamily.episode`, here over the evaluation client
(side turns, a per-item seed, greedy by default), with its environment in this process or on the
pool servers that ``ENV_SERVER_URL`` / ``WORKER_URLS`` name. The item scores 1 when the family
calls the episode solved (:meth:`~openclaw_rl.agentic.family.AgentFamily.solved`: environment
score 1: for ``math-tool`` a correct boxed answer, for ``terminal`` the task's checks passing, for
``swe`` the patch resolving the instance, for ``gui`` MiniWoB's success). Scores are 0/1, so results
get Wilson intervals and before/after comparisons get the same paired statistics as the other tasks.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai

from openclaw_rl.agentic.family import AgentFamily
from openclaw_rl.evaluation.tasks.base import Task

__all__ = ["AgentTask", "EvalChat"]


class EvalChat:
    """The agent loop's chat interface over an :class:`~openclaw_rl.evaluation.client.EvalClient`
    (text only: evaluation keeps no token ids; each step's ``turn`` is None)."""

    def __init__(self, client: Any, task: str, item_id: str, max_tokens: int):
        self.client, self.task, self.item_id, self.max_tokens = client, task, item_id, max_tokens

    async def step(self, session_id: str, messages: list[dict], tools: list[dict] | None,
                   sampling_params: dict) -> tuple[dict, None] | tuple[None, str]:
        """One chat completion; ``(None, reason)`` when the prompt is too long for the server.

        Raises:
            openai.APIStatusError: any other refusal.
        """
        try:
            resp = await asyncio.to_thread(self.client.chat, self.task, self.item_id, messages,
                                           max_tokens=self.max_tokens, tools=tools)
        except openai.BadRequestError as exc:
            if getattr(exc, "code", None) == "context_length_exceeded":
                return None, str(exc)[:300]
            raise
        choice = resp.choices[0]
        message = {"content": choice.message.content, "finish_reason": choice.finish_reason,
                   "tool_calls": [c.model_dump() for c in (choice.message.tool_calls or [])]}
        return message, None


class AgentTask(Task):
    """Held-out episodes of one agent family.

    Args:
        family: the configured family (:func:`openclaw_rl.agentic.family.get_family`).
        max_tokens: completion budget per step (default: the family's ``eval_max_tokens``).
    """

    metric = "solved"
    kind = "proportion"

    def __init__(self, family: AgentFamily, max_tokens: int | None = None):
        self.family, self.name = family, family.name
        self.max_tokens = max_tokens or family.eval_max_tokens
        self._eval_path: Path | None = None

    @property
    def eval_path(self) -> Path:
        """The family's held-out JSONL (built on first use)."""
        if self._eval_path is None:
            self._eval_path = Path(self.family.dataset_path("eval"))
        return self._eval_path

    def items(self) -> list[dict]:
        """One item per held-out row, in file order; ``group`` is the row's ``metadata.group``
        (else the env type).

        Raises:
            ValueError: a missing file or a row without ``metadata.task_key``.
        """
        if not self.eval_path.is_file():
            raise ValueError(f"{self.name}: held-out tasks {self.eval_path}: no such file")
        out = []
        for n, line in enumerate(self.eval_path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            meta = row.get("metadata") or {}
            if "task_key" not in meta:
                raise ValueError(f"{self.eval_path} line {n}: metadata.task_key missing")
            out.append({"id": str(meta["task_key"]), "group": str(meta.get("group", self.family.env_type)),
                        "label": row.get("label"), "metadata": meta})
        return out

    def run(self, item: dict, client: Any) -> dict:
        """Run the item's episode (the family's task setup for ``client.model_path``, then its
        episode); score 1 when solved (module docstring).

        Raises:
            ValueError: a task setting the evaluated policy cannot play with (one line).
        """
        meta = self.family.prepare_task(dict(item["metadata"]), getattr(client, "model_path", None))
        chat = EvalChat(client, self.name, item["id"], self.max_tokens)
        ep = asyncio.run(self.family.episode(chat, item["id"], meta, {}, session_id=f"agent:eval-{item['id']}",
                                             request_id=f"eval-{item['id']}"))
        solved = self.family.solved(ep.score)
        return {"score": float(solved),
                "detail": {"env_score": ep.score, "finish": str(ep.finish), "steps": len(ep.steps),
                           "tool_calls": ep.num_tool_calls, "final": ep.final_response[:1000],
                           "error": ep.error, **self.family.episode_detail(ep)}}

    def settings(self) -> dict:
        """``max_tokens``, ``max_turns`` and the held-out file (a resumed run must share them)."""
        return {"max_tokens": self.max_tokens, "max_turns": self.family.max_turns(), "eval_path": str(self.eval_path)}
