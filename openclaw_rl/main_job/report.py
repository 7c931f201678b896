"""What the main job reports: the judges measured against the simulated user's truth, the user's
satisfaction per weight version during training, and the learning plot.

The simulated user logs, per main turn, whether the reply met its preference
(:class:`~openclaw_rl.main_job.user.TruthRecord`). Joined with the store's judgements of the same
turns (session id + main-turn index, checked on the reply text), that truth measures:

* the PRM: a reply that met the preference should get ``+1``, one that missed it ``-1``
  (a ``0`` counts as a disagreement); accuracy and the confusion counts;
* the hint judge: a hint should be accepted exactly for the replies that missed the preference,
  and an accepted hint should name the preference (:attr:`Preference.hint_terms`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

__all__ = ["joined_turns", "judge_report", "per_version", "plot_learning"]


def joined_turns(store, truth) -> tuple[list[tuple], int]:
    """``([(turn, judgement details or {}, truth record)], n_unmatched)`` for the simulated user's
    main turns; a truth record whose stored reply differs from what the user saw is unmatched."""
    by_session: dict[str, list] = defaultdict(list)
    for t in store.turns():
        if t.turn_type == "main":
            by_session[t.session_id].append(t)
    out, unmatched = [], 0
    for rec in truth:
        turns = sorted(by_session.get(rec.session_id, []), key=lambda t: t.id)
        turn = turns[rec.index] if rec.index < len(turns) else None
        if turn is None or turn.response_text.strip() != rec.reply.strip():
            unmatched += 1
            continue
        j = store.judgement(turn.id) or {}
        out.append((turn, j.get("details") or {}, rec))
    return out, unmatched


def judge_report(rows: list[tuple], hint_terms: tuple[str, ...]) -> dict:
    """Agreement of the judges with the truth over ``rows`` (from :func:`joined_turns`).

    Returns:
        ``{"prm": {"n", "accuracy", "confusion": {"met/+1", "met/0", "met/-1", "missed/+1",
        "missed/0", "missed/-1"}, "mode"} or None, "hints": {"n", "agreement", "accepted",
        "naming_preference"} or None, "next_state_share"}``.
    """
    prm_rows = [(d, rec) for _, d, rec in rows if "verdict" in d]
    prm = None
    if prm_rows:
        conf = {f"{m}/{v}": 0 for m in ("met", "missed") for v in ("+1", "0", "-1")}
        for d, rec in prm_rows:
            conf[f"{'met' if rec.satisfied else 'missed'}/{ {1: '+1', -1: '-1'}.get(d['verdict'], '0')}"] += 1
        correct = conf["met/+1"] + conf["missed/-1"]
        modes = sorted({str(d.get("mode") or d.get("backend") or "?") for d, _ in prm_rows})
        prm = {"n": len(prm_rows), "accuracy": correct / len(prm_rows), "confusion": conf, "mode": ", ".join(modes)}
    hint_rows = [(d, rec) for _, d, rec in rows if "hint_accepted" in d]
    hints = None
    if hint_rows:
        agree = sum(bool(d["hint_accepted"]) != rec.satisfied for d, rec in hint_rows)
        accepted = [d.get("hint") or "" for d, _ in hint_rows if d["hint_accepted"]]
        naming = sum(any(term.lower() in h.lower() for term in hint_terms) for h in accepted)
        hints = {"n": len(hint_rows), "agreement": agree / len(hint_rows), "accepted": len(accepted),
                 "naming_preference": naming / len(accepted) if accepted else None}
    with_next = sum(t.next_state is not None for t, _, _ in rows)
    return {"prm": prm, "hints": hints, "next_state_share": with_next / len(rows) if rows else None}


def per_version(rows: list[tuple]) -> dict[int, dict]:
    """Per weight version that produced the replies: ``{version: {"n", "satisfaction",
    "first_reply", "retry", "cut", "prm_agreement"}}``. ``first_reply`` is the satisfaction of a
    session's first replies (what the held-out questions measure), ``retry`` that of the replies
    after the user's reaction (a correction in context), each None without such replies; ``cut``
    the share of replies that ended on the token budget; agreement None when no PRM verdict was
    recorded."""
    groups: dict[int, list] = defaultdict(list)
    for turn, d, rec in rows:
        groups[int(turn.weight_version)].append((d, rec))

    def rate(recs):
        return sum(rec.satisfied for rec in recs) / len(recs) if recs else None

    out = {}
    for v, items in sorted(groups.items()):
        judged = [(d, rec) for d, rec in items if "verdict" in d]
        agree = sum((d["verdict"] == 1) == rec.satisfied and d["verdict"] != 0 for d, rec in judged)
        recs = [rec for _, rec in items]
        out[v] = {"n": len(items), "satisfaction": rate(recs),
                  "first_reply": rate([r for r in recs if r.index == 0]),
                  "retry": rate([r for r in recs if r.index > 0]),
                  "cut": sum(r.cut for r in recs) / len(recs),
                  "prm_agreement": agree / len(judged) if judged else None}
    return out


def plot_learning(path: Path, versions: dict[int, dict], metrics: list[dict], heldout: dict,
                  title: str, quality: dict | None = None, nll: dict | None = None) -> Path:
    """Write the learning plot: per weight version the user's satisfaction during training and the
    PRM's agreement with the truth; per train step the reward mean and the promotion gate's
    verdict (rejected steps marked); the held-out satisfaction before and after training as bars
    with their 95% intervals; and, with ``quality`` / ``nll``
    (:mod:`openclaw_rl.main_job.quality`), quality before and after: over-application and
    degenerate-reply rates, distinct word pairs, the reference NLL's rise. Returns ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4 if quality else 3, figsize=(19 if quality else 14, 4))
    xs = sorted(versions)
    ax = axes[0]
    ax.plot(xs, [versions[v]["satisfaction"] for v in xs], marker="o", label="user satisfied (training)")
    agree = [(v, versions[v]["prm_agreement"]) for v in xs if versions[v]["prm_agreement"] is not None]
    if agree:
        ax.plot([v for v, _ in agree], [a for _, a in agree], marker="s", label="judge agrees with user")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("weight version that answered")
    ax.set_title("during training")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax = axes[1]
    steps = [m["step"] for m in metrics]
    ax.plot(steps, [m.get("reward/mean", float("nan")) for m in metrics], marker="o", ms=3)
    rejected = [m["step"] for m in metrics if m.get("gate/passed") == 0.0]
    if rejected:
        ax.scatter(rejected, [m.get("reward/mean", 0.0) for m in metrics if m.get("gate/passed") == 0.0],
                   marker="x", color="red", s=60, zorder=3, label="version rejected by the gate")
        ax.legend(fontsize=8)
    ax.set_xlabel("train step")
    ax.set_title("reward mean of trained samples")
    ax.grid(alpha=0.3)
    ax = axes[2]
    vals = [heldout["before"]["rate"], heldout["after"]["rate"]]
    errs = [[v - heldout[k]["ci95"][0] for v, k in zip(vals, ("before", "after"))],
            [heldout[k]["ci95"][1] - v for v, k in zip(vals, ("before", "after"))]]
    ax.bar(["before", "after"], vals, yerr=errs, capsize=6, color=["#999999", "#3a7dc9"])
    p = heldout["comparison"]["mcnemar"]["p_value"]
    ax.set_title(f"held-out satisfaction\n(n={heldout['before']['n']}, McNemar p={p:.3g})")
    ax.set_ylim(0, 1.05)
    if quality:
        ax = axes[3]
        names = ["over-applied", "degenerate", "distinct pairs"]
        keys = [("over_application", "rate"), ("any_problem", "rate"), ("distinct_pairs", "mean")]
        for j, (when, color) in enumerate((("before", "#999999"), ("after", "#3a7dc9"))):
            vals = [quality[when][k][v] for k, v in keys]
            errs = [[val - quality[when][k]["ci95"][0] for val, (k, _) in zip(vals, keys)],
                    [quality[when][k]["ci95"][1] - val for val, (k, _) in zip(vals, keys)]]
            ax.bar([i + 0.4 * j for i in range(3)], vals, width=0.4, yerr=errs, capsize=4, color=color, label=when)
        ax.set_xticks([i + 0.2 for i in range(3)], names)
        ax.set_ylim(0, 1.05)
        rise = f", reference NLL {nll['rise']:+.1%}" if nll and nll.get("rise") is not None else ""
        ax.set_title(f"held-out quality{rise}")
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
