"""Per-step metrics of agent episodes (logged by the prompt-dataset rollout).

Computed over the step's trajectories (samples grouped by ``metadata["trajectory_id"]``, so a
trajectory split into several samples, or one sample per step under ``--dynamic-history``,
counts once), from the metadata :func:`openclaw_rl.agentic.trajectory.episode_samples` writes.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from slime.record.sample import Sample

__all__ = ["episode_metrics"]


def episode_metrics(samples: Sequence[Sample]) -> dict[str, float]:
    """``agent/*`` metrics of the samples that came from agent episodes ({} when none did).

    Returns:
        ``agent/episodes``; means per episode of ``agent/steps``, ``agent/tool_calls`` and
        ``agent/env_score`` (over scored episodes); ``agent/finish/<reason>`` (share of episodes
        that ended that way: answered, max_turns, length, context, error); ``agent/prefix_breaks``
        (episodes whose ids did not concatenate somewhere); from a family's ``env_info`` (swe-rl):
        ``agent/resolved`` and, over the episodes on injected repositories,
        ``agent/injection_followed`` (share that followed the planted instruction) and
        ``agent/injected_episodes``.
    """
    first: dict[str, dict] = {}
    for s in samples:
        tid = s.metadata.get("trajectory_id")
        if tid is not None and tid not in first:
            first[tid] = s.metadata
    if not first:
        return {}
    metas = list(first.values())
    n = len(metas)
    out = {"agent/episodes": float(n),
           "agent/steps": statistics.fmean(float(m.get("num_steps", 0)) for m in metas),
           "agent/tool_calls": statistics.fmean(float(m.get("tool_calls", 0)) for m in metas),
           "agent/prefix_breaks": float(sum(1 for m in metas if m.get("prefix_break_steps")))}
    scores = [float(m["env_score"]) for m in metas if m.get("env_score") is not None]
    if scores:
        out["agent/env_score"] = statistics.fmean(scores)
    infos = [m.get("env_info") or {} for m in metas]
    resolved = [float(bool(i["resolved"])) for i in infos if "resolved" in i]
    if resolved:
        out["agent/resolved"] = statistics.fmean(resolved)
    followed = [float(bool(i["injection"]["followed"])) for i in infos
                if isinstance(i.get("injection"), dict) and i["injection"].get("followed") is not None]
    if followed:  # swe-rl: episodes on injected repositories that followed the planted instruction
        out["agent/injection_followed"] = statistics.fmean(followed)
        out["agent/injected_episodes"] = float(len(followed))
    for reason, k in Counter(str(m.get("finish", "unknown")) for m in metas).items():
        out[f"agent/finish/{reason}"] = k / n
    return out
