"""Counts of what a run's store recorded: sessions, main and side turns, and the judgements."""

from __future__ import annotations

__all__ = ["traffic_counts"]


def traffic_counts(store, method: str) -> dict:
    """Counts over the store's turns.

    Returns:
        ``{"sessions", "main_turns", "side_turns", "main_turns_with_next_state",
        "main_turns_truncated", "verdicts": {"+1", "-1", "0"}, "dispatch": {"both", "opd", "rl",
        "none"}, "hints": {"accepted", "rejected"}, "hint_acceptance_rate"}`` (the rate is None for
        ``rl``, which runs no hint judge).
    """
    turns = store.turns()
    main = [t for t in turns if t.turn_type == "main"]
    verdicts: dict[str, int] = {}
    branches: dict[str, int] = {}
    hints = {"accepted": 0, "rejected": 0}
    for t in main:
        d = (store.judgement(t.id) or {}).get("details") or {}
        if "verdict" in d:
            key = {1: "+1", -1: "-1"}.get(d["verdict"], "0")
            verdicts[key] = verdicts.get(key, 0) + 1
        if d.get("branch"):
            branches[d["branch"]] = branches.get(d["branch"], 0) + 1
        if "hint_accepted" in d:
            hints["accepted" if d["hint_accepted"] else "rejected"] += 1
    judged_hints = hints["accepted"] + hints["rejected"]
    return {"sessions": len(store.session_ids()), "main_turns": len(main), "side_turns": len(turns) - len(main),
            "main_turns_with_next_state": sum(t.next_state is not None for t in main),
            "main_turns_truncated": sum(t.finish_reason == "length" for t in main),
            "verdicts": verdicts, "dispatch": branches, "hints": hints,
            "hint_acceptance_rate": None if method == "rl" else hints["accepted"] / max(1, judged_hints)}
