"""Agent tasks (``math-tool``, ``terminal``, ``swe``): held-out episodes of a Track 2 family.

Each item is one held-out task of the family's evaluation split; the episode runs with the same
loop as training (:func:`openclaw_rl.agentic.agent_loop.run_episode`), here over the evaluation
client (side turns, a per-item seed, greedy by default), with its environment in this process or
on the pool servers that ``ENV_SERVER_URL`` / ``WORKER_URLS`` name. The item scores 1 when the
episode solved the task: for ``math-tool`` a correct boxed answer, for ``terminal`` the task's
checks passing (environment score 1, i.e. ``2*acc - 1 = 1``), for ``swe`` the patch resolving the
instance (its own mini-swe-agent loop, :func:`openclaw_rl.envs.swe.agent.swe_episode`; the
item's detail says whether the agent followed the planted instruction). Scores are 0/1, so results get
Wilson intervals and before/after comparisons get the same paired statistics as the other tasks.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

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
        import openai

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


def _info_detail(info: dict) -> dict:
    """The family's episode results worth keeping per item (swe-rl: resolved, submitted, injection)."""
    keep = ("resolved", "applied", "submitted", "patch_lines", "injection", "episode_seconds")
    return {k: info[k] for k in keep if k in info}


class AgentTask(Task):
    """Held-out episodes of one agent family.

    Args:
        name: ``math-tool`` or ``terminal``.
        env_type: the environment registry name (``math_tool``, ``terminal``).
        eval_path: the family's held-out JSONL (``{"prompt", "label", "metadata"}``).
        max_turns: model replies per episode.
        system_prompt: the family's system message, as in training.
        episode_fn: ``module:function`` of the family's own episode runner (swe-rl), as in training.
    """

    metric = "solved"
    kind = "proportion"

    def __init__(self, name: str, env_type: str, eval_path: str | Path, max_turns: int,
                 system_prompt: str | None = None, max_tokens: int = 512, episode_fn: str | None = None):
        self.name, self.env_type, self.eval_path = name, env_type, Path(eval_path)
        self.episode_fn = episode_fn
        self.max_turns, self.system_prompt, self.max_tokens = max_turns, system_prompt, max_tokens

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
            out.append({"id": str(meta["task_key"]), "group": str(meta.get("group", self.env_type)),
                        "label": row.get("label"), "metadata": meta})
        return out

    def run(self, item: dict, client: Any) -> dict:
        """Run the item's episode; score 1 when solved (module docstring)."""
        from openclaw_rl.agentic.agent_loop import run_episode
        from openclaw_rl.agentic.generate import open_env

        async def episode():
            if self.episode_fn:
                module, _, fn = self.episode_fn.partition(":")
                runner = getattr(__import__(module, fromlist=[fn]), fn)
                chat = EvalChat(client, self.name, item["id"], self.max_tokens)
                return await runner(chat, item["id"], dict(item["metadata"]), {}, self.max_turns,
                                    f"agent:eval-{item['id']}")
            env = await open_env(self.env_type, item["id"], dict(item["metadata"]), request_id=f"eval-{item['id']}")
            chat = EvalChat(client, self.name, item["id"], self.max_tokens)
            return await run_episode(chat, env, {}, self.max_turns, system_prompt=self.system_prompt)

        ep = asyncio.run(episode())
        solved = ep.score is not None and ep.score >= 1.0
        return {"score": float(solved),
                "detail": {"env_score": ep.score, "finish": ep.finish, "steps": len(ep.steps),
                           "tool_calls": ep.num_tool_calls, "final": ep.final_response[:1000],
                           "error": ep.error, **_info_detail(ep.info)}}

    def settings(self) -> dict:
        """``max_tokens``, ``max_turns`` and the held-out file (a resumed run must share them)."""
        return {"max_tokens": self.max_tokens, "max_turns": self.max_turns, "eval_path": str(self.eval_path)}
