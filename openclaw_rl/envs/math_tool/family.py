"""The ``math-tool`` agent family (toolcall-rl, ReTool-style math): GSM-Symbolic training problems,
the held-out templates' GSM8K problems, a sandboxed ``code_interpreter`` tool, a boxed answer.

Turn limit: the tools config's ``max_turns`` (``TOOLS_CONFIG`` / ``TOOL_CONFIGS``, upstream's
file, :mod:`.tools_config`). Reward: the environment's score of the final answer (+1 correct; a
wrong answer upstream's tool-use shaped ``min(-0.6, -1.1 + 0.05 * interpreter runs)``,
:mod:`.reward`); an episode the environment could not score is scored from its final text.
"""

from __future__ import annotations

from pathlib import Path

from openclaw_rl.agentic.family import AgentFamily, Split
from openclaw_rl.envs.math_tool.data import dataset_path
from openclaw_rl.envs.math_tool.env import MathToolEnv
from openclaw_rl.envs.math_tool.prompt import ENV_TYPE
from openclaw_rl.envs.math_tool.reward import score_answer
from openclaw_rl.envs.math_tool.tools_config import ENV_VARS, load_tools_config
from slime.record.sample import Sample

__all__ = ["MathToolFamily"]


class MathToolFamily(AgentFamily):
    """ReTool-style math with a Python interpreter (module docstring)."""

    name = "math-tool"
    aliases = ("math_tool", "toolcall", "retool")
    env_type = ENV_TYPE
    job_env = ENV_VARS  # the tools config (TOOLS_CONFIG / TOOL_CONFIGS)

    def dataset_path(self, split: Split) -> Path:
        """The default dataset's split (:func:`openclaw_rl.envs.math_tool.data.dataset_path`)."""
        return dataset_path(split)

    def make_env(self, task_key: str, task: dict) -> MathToolEnv:
        """A :class:`~.env.MathToolEnv` with the tools config in effect."""
        return MathToolEnv(task_key, task, load_tools_config())

    def max_turns(self) -> int:
        """The tools config's ``max_turns``."""
        return int(load_tools_config().max_turns)

    def reward(self, sample: Sample) -> dict:
        """``{"score", "acc": 0|1, "pred"}`` of the episode's final answer (the same for every sample
        of one trajectory): the environment's score when it scored the episode."""
        final = sample.metadata.get("final_response", sample.response) or ""
        env_score = sample.metadata.get("env_score")
        out = score_answer(final, str(sample.label), 0)
        score = float(env_score) if env_score is not None else out["reward"]
        return {"score": score, "acc": float(out["correct"]), "pred": out["pred"]}
