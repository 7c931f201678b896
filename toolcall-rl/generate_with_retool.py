"""toolcall-rl's plugins (upstream names): ``generate`` (``--custom-generate-function-path``) and
``reward_func`` (``--custom-rm-path``, with ``--reward-key score``).

``generate`` runs one ReTool-style episode per sample: the model calls ``code_interpreter``
(a sandboxed Python run; limits from ``TOOLS_CONFIG`` / ``TOOL_CONFIGS``), reads the program's
output in ``<interpreter>...</interpreter>``, and boxes its answer; at most ``max_turns`` replies.
Every step goes through the intercept server (:func:`openclaw_rl.agentic.generate.generate_agent`).

``reward_func`` returns the environment's score of the episode (``MathToolEnv.evaluate``: the
final answer checked against the label, +1 correct; a wrong answer upstream's tool-use shaped
``min(-0.6, -1.1 + 0.05 * interpreter runs)``, :mod:`openclaw_rl.envs.math_tool.reward`) as
``{"score", "acc", "pred"}``; the environment counts its own interpreter runs, so a malformed call
earns no shaping. An episode the environment could not score is scored from its final text.
"""

from __future__ import annotations

from typing import Any

from openclaw_rl.agentic.families import family
from openclaw_rl.agentic.generate import generate_agent
from openclaw_rl.envs.math_tool.reward import score_answer
from slime.sample import Sample


async def generate(args: Any, sample: Sample, sampling_params: dict) -> list[Sample]:
    """One math_tool episode for ``sample`` (its metadata names the task); returns its samples."""
    fam = family("math-tool")
    return await generate_agent(args, sample, sampling_params, max_turns=fam.max_turns(),
                                system_prompt=fam.system())


async def reward_func(args: Any, sample: Sample) -> dict:
    """``{"score": reward, "acc": 0|1, ...}`` of the episode's final answer (same for every
    sample of one trajectory)."""
    final = sample.metadata.get("final_response", sample.response) or ""
    env_score = sample.metadata.get("env_score")
    out = score_answer(final, str(sample.label), 0)
    score = float(env_score) if env_score is not None else out["reward"]
    return {"score": score, "acc": float(out["correct"]), "pred": out["pred"]}
