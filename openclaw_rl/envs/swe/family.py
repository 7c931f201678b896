"""The ``swe`` agent family (swe-rl): repository repair with the mini-swe-agent loop.

Data: the inspect-evals ``ipi_coding_agent`` repositories as SWE-bench instances (:mod:`.data`).
Episode: its own loop (:func:`.agent.swe_episode`: one bash block per step, a fresh sandboxed copy
of the repository, submission by ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``), so
:meth:`SweFamily.episode` replaces the tool-call loop. Flags: :class:`~.config.SweFlags`. Turn
limit: ``--swe-step-limit`` (``SWE_STEP_LIMIT``), else ``MAX_STEPS``, else the config's
``step_limit`` (:func:`.config.step_limit`). Reward: +1 when the
patch resolved the instance, -1 otherwise, plus ``resolved`` and, on injected repositories,
``injection_followed``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openclaw_rl.agentic.agent_loop import Episode
from openclaw_rl.agentic.family import AgentFamily, Split
from openclaw_rl.envs.swe.agent import swe_episode
from openclaw_rl.envs.swe.config import SweFlags, load_config, step_limit
from openclaw_rl.envs.swe.data import dataset_path
from openclaw_rl.envs.swe.env import SweEnv
from slime.record.sample import Sample

__all__ = ["SweFamily"]

#: the episode results an evaluation keeps per item
_DETAIL_KEYS = ("resolved", "applied", "submitted", "patch_lines", "injection", "episode_seconds")


class SweFamily(AgentFamily):
    """Repository repair (module docstring)."""

    name = "swe"
    env_type = "swe"
    Flags = SweFlags
    job_env = ("SWE_EXEC_SERVER_URLS", "SWE_ENV_SERVER_URL", "SWE_MAX_CONCURRENT", "SWE_SAVE_TRAJ_DIR",
               "OPENCLAW_RL_CACHE")

    def dataset_path(self, split: Split) -> Path:
        """The converted repositories' ``train`` or ``eval`` rows."""
        return dataset_path(split)

    def make_env(self, task_key: str, task: dict) -> SweEnv:
        """A :class:`~.env.SweEnv` with the flags' config file and evaluation timeout (the pool
        servers build it; so does :meth:`episode`)."""
        return SweEnv(task_key, task, load_config(self.flags.swe_config_path), self.flags.swe_eval_timeout)

    def max_turns(self) -> int:
        """``--swe-step-limit``, else :func:`openclaw_rl.envs.swe.config.step_limit`'s fallbacks."""
        return step_limit(self.flags.swe_step_limit, self.flags.swe_config_path)

    async def episode(self, chat: Any, task_key: str, metadata: dict, sampling_params: dict, *,
                      session_id: str, request_id: str) -> Episode:
        """The mini-swe-agent loop (:func:`openclaw_rl.envs.swe.agent.swe_episode`) on a fresh
        :meth:`make_env` under ``--swe-rollout-timeout``."""
        return await swe_episode(chat, self.make_env(task_key, metadata), task_key, sampling_params, self.max_turns(),
                                 session_id, self.flags.swe_rollout_timeout or None)

    def reward(self, sample: Sample) -> dict:
        """``{"score": +1 | -1, "resolved": 0 | 1[, "injection_followed": 0 | 1]}`` from the episode."""
        score = self.env_score(sample)
        out = {"score": score, "resolved": float(score > 0)}
        inj = (sample.metadata.get("env_info") or {}).get("injection") or {}
        if inj.get("followed") is not None:
            out["injection_followed"] = float(bool(inj["followed"]))
        return out

    def episode_detail(self, episode: Episode) -> dict:
        """Resolved, applied, submitted, patch size, the injection report, seconds."""
        return {k: episode.info[k] for k in _DETAIL_KEYS if k in episode.info}
