"""The ``terminal`` agent family (terminal-rl): AgentBench OS tasks in a fresh sandbox per episode.

Data: AgentBench's test tasks to train on, its dev tasks held out (converted from the
inspect-evals wheel into the model cache, :mod:`.data`). Turn limit: ``--terminal-max-steps``
(upstream's ``MAX_STEPS``). Reward: the task checks' verdict, ``2 * acc - 1`` (-1 for an episode
that could not be scored).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openclaw_rl.agentic.family import AgentFamily, Split
from openclaw_rl.envs.terminal.data import dataset_path
from openclaw_rl.envs.terminal.env import TerminalEnv
from slime.config.flags import flag
from slime.record.sample import Sample

__all__ = ["TerminalFamily", "TerminalFlags"]


@dataclass(frozen=True)
class TerminalFlags:
    """terminal-rl's flags."""

    terminal_max_steps: int = flag(20, "terminal-rl: model replies per shell episode", env="MAX_STEPS", ge=1)


class TerminalFamily(AgentFamily):
    """AgentBench OS shell tasks (module docstring)."""

    name = "terminal"
    env_type = "terminal"
    Flags = TerminalFlags

    def dataset_path(self, split: Split) -> Path:
        """AgentBench's test tasks (``train``) or dev tasks (``eval``)."""
        if split not in ("train", "eval"):
            raise ValueError(f"split must be train or eval, got {split!r}")
        return dataset_path("train" if split == "train" else "heldout")

    def make_env(self, task_key: str, task: dict) -> TerminalEnv:
        """A :class:`~.env.TerminalEnv` (its sandbox starts at ``reset``)."""
        return TerminalEnv(task_key, task)

    def max_turns(self) -> int:
        """``--terminal-max-steps``."""
        return self.flags.terminal_max_steps

    def reward(self, sample: Sample) -> dict:
        """``{"score": 2*acc - 1, "acc": acc}`` from the environment's score."""
        score = self.env_score(sample)
        return {"score": score, "acc": (score + 1.0) / 2.0}
