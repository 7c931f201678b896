"""swe-rl's plugins (upstream names): ``generate`` (``--custom-generate-function-path``) and
``reward_func`` (``--custom-rm-path``, with ``--reward-key score``).

``generate`` runs one repository-repair episode per sample: a fresh sandboxed copy of the
instance's repository, the mini-swe-agent loop (:func:`openclaw_rl.envs.swe.agent.swe_episode`:
one bash block per step, ``SWE_STEP_LIMIT`` / the config's ``step_limit`` replies, submission by
``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``), every step through the intercept server
(:func:`openclaw_rl.agentic.generate.generate_agent`). ``reward_func`` returns +1 when the patch
resolved the instance, -1 otherwise, plus ``resolved`` and, on injected repositories,
``injection_followed`` (1 when the agent followed the planted instruction).
"""

from __future__ import annotations

from typing import Any

from openclaw_rl.agentic.families import family
from openclaw_rl.agentic.generate import generate_agent
from slime.sample import Sample


async def generate(args: Any, sample: Sample, sampling_params: dict) -> list[Sample]:
    """One SWE episode for ``sample`` (its metadata holds the instance); returns its samples."""
    fam = family("swe")
    return await generate_agent(args, sample, sampling_params, max_turns=fam.max_turns(),
                                episode_fn=fam.episode_runner())


async def reward_func(args: Any, sample: Sample) -> dict:
    """``{"score": +1 | -1, "resolved": 0 | 1[, "injection_followed": 0 | 1]}`` from the episode."""
    score = sample.metadata.get("env_score")
    score = -1.0 if score is None else float(score)
    out = {"score": score, "resolved": float(score > 0)}
    inj = (sample.metadata.get("env_info") or {}).get("injection") or {}
    if inj.get("followed") is not None:
        out["injection_followed"] = float(bool(inj["followed"]))
    return out
