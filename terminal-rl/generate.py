"""terminal-rl's plugins (upstream names): ``generate`` (``--custom-generate-function-path``) and
``reward_func`` (``--custom-rm-path``, with ``--reward-key score``).

``generate`` runs one shell episode per sample in a fresh sandbox (the task's setup already run),
at most ``MAX_STEPS`` model replies; every step goes through the intercept server
(:func:`openclaw_rl.agentic.generate.generate_agent`). ``reward_func`` returns the task checks'
verdict as ``{"score": 2*acc - 1, "acc": acc}`` (the environment's score; an episode that could
not be scored gets -1).
"""

from __future__ import annotations

from typing import Any

from openclaw_rl.agentic.families import family
from openclaw_rl.agentic.generate import generate_agent
from slime.sample import Sample


async def generate(args: Any, sample: Sample, sampling_params: dict) -> list[Sample]:
    """One terminal episode for ``sample`` (its metadata names the task); returns its samples."""
    fam = family("terminal")
    return await generate_agent(args, sample, sampling_params, max_turns=fam.max_turns(),
                                system_prompt=fam.system())


async def reward_func(args: Any, sample: Sample) -> dict:
    """``{"score": 2*acc - 1, "acc": acc}`` from the environment's score."""
    score = sample.metadata.get("env_score")
    score = -1.0 if score is None else float(score)
    return {"score": score, "acc": (score + 1.0) / 2.0}
