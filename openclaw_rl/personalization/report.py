"""The benchmark's table and plot, from the runs' ``run.json`` files.

Per method and persona: sessions to stable over the seeds, mean with Student's t 95% interval
(:func:`openclaw_rl.evaluation.stats.mean_interval`; a run that never got stable counts as its ``N``
and the table says how many did), the pass rate over all sessions, and the held-out before/after.
``joint`` is the mean over the personas of a run (the paper's average), for runs with several.

Which differences are significant, for every pair of methods and each persona (and ``joint``):

* sessions to stable, paired by seed (the same seed asks the same questions in the same order):
  the t interval of the per-seed differences (:func:`openclaw_rl.evaluation.stats.paired_delta`);
  significant when it excludes 0;
* the first replies, paired by (seed, session): exact McNemar
  (:func:`openclaw_rl.evaluation.stats.mcnemar_exact`); significant when p < 0.05.

With one seed the t interval is undefined (shown as nan), and only McNemar can say anything.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

from openclaw_rl.evaluation.stats import mcnemar_exact, mean_interval, paired_delta

__all__ = ["JOINT", "RUN_KEYS", "aggregate", "comparisons", "load_runs", "plot_curves", "table_lines"]

#: the row that averages the personas of each run
JOINT = "joint"
ALPHA = 0.05
#: share of cut-off first replies above which the table says the budget, not the method, decided a row
CUT_OFF_NOTE = 0.5


#: what the table reads from a run's ``run.json`` (per persona: ``curve``, ``stable``)
RUN_KEYS = ("method", "seed", "sessions", "personas")


def _run_problem(run) -> str | None:
    """What keeps ``run`` (a parsed ``run.json``) out of the table, or None."""
    if not isinstance(run, dict):
        return "not a JSON object"
    missing = [k for k in RUN_KEYS if k not in run]
    if missing:
        return "no " + ", ".join(missing)
    if not isinstance(run["personas"], dict) or not run["personas"]:
        return "no personas"
    for name, per in run["personas"].items():
        gaps = [k for k in ("curve", "stable") if not isinstance(per, dict) or k not in per]
        if gaps:
            return f"persona {name!r} has no {', '.join(gaps)}"
    return None


def load_runs(root: Path) -> list[dict]:
    """Every ``run.json`` under ``root`` (``<method>/seed-<s>/run.json``), in path order.

    Raises:
        ValueError: a file that is not a bench run (not JSON, or without :data:`RUN_KEYS` or a
            persona's ``curve`` and ``stable``); the message names the file.
    """
    runs = []
    for path in sorted(Path(root).rglob("run.json")):
        try:
            run = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
        problem = _run_problem(run)
        if problem:
            raise ValueError(f"{path}: not a personalization run ({problem})")
        runs.append(run)
    return runs


def _per_seed(runs: list[dict]) -> dict[tuple[str, str], dict[int, dict]]:
    """``{(method, persona or JOINT): {seed: {"sessions", "reached", "curve"}}}`` (JOINT only for runs
    with several personas)."""
    out: dict[tuple[str, str], dict[int, dict]] = defaultdict(dict)
    for r in runs:
        per = r["personas"]
        for name, p in per.items():
            out[(r["method"], name)][r["seed"]] = {"sessions": p["stable"]["sessions"],
                                                   "reached": p["stable"]["reached"], "curve": p["curve"],
                                                   "misses": p.get("misses")}
        if len(per) < 2:  # one persona: JOINT would repeat it
            continue
        misses = [p.get("misses") for p in per.values()]
        out[(r["method"], JOINT)][r["seed"]] = {
            "sessions": sum(p["stable"]["sessions"] for p in per.values()) / len(per),
            "reached": all(p["stable"]["reached"] for p in per.values()),
            "curve": [c for p in per.values() for c in p["curve"]],
            "misses": None if None in misses else dict(sum((Counter(m) for m in misses), Counter()))}
    return out


def aggregate(runs: list[dict]) -> dict[str, dict[str, dict]]:
    """``{method: {persona or JOINT: {"mean", "ci95", "seeds", "reached", "values", "reached_per_seed",
    "pass_rate", "misses", "heldout_before", "heldout_after"}}}`` (``values`` and ``reached_per_seed``
    in seed order); ``misses`` maps why first replies missed
    (:meth:`openclaw_rl.personalization.personas.BenchPersona.miss_reason`) to its share of all first
    replies over the seeds, most first (None when a run did not record it); held-out means over
    seeds, None when not measured."""
    held: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in runs:
        for name, p in r["personas"].items():
            if p.get("heldout"):
                held[(r["method"], name)].append((p["heldout"]["before"], p["heldout"]["after"]))
    out: dict[str, dict[str, dict]] = defaultdict(dict)
    for (method, persona), seeds in _per_seed(runs).items():
        values = [seeds[s]["sessions"] for s in sorted(seeds)]
        mean, lo, hi = mean_interval(values)
        curve = [c for s in sorted(seeds) for c in seeds[s]["curve"]]
        h = held.get((method, persona))
        misses = [seeds[s]["misses"] for s in seeds]
        out[method][persona] = {"misses": None if None in misses or not curve else
                                {k: v / len(curve) for k, v in sum((Counter(m) for m in misses), Counter()).most_common()},
                                "mean": mean, "ci95": [lo, hi], "seeds": len(values), "values": values,
                                "reached_per_seed": [bool(seeds[s]["reached"]) for s in sorted(seeds)],
                                "reached": sum(seeds[s]["reached"] for s in seeds),
                                "pass_rate": sum(curve) / len(curve) if curve else math.nan,
                                "heldout_before": sum(b for b, _ in h) / len(h) if h else None,
                                "heldout_after": sum(a for _, a in h) / len(h) if h else None}
    return dict(out)


def comparisons(runs: list[dict]) -> list[dict]:
    """Every pair of methods, per persona and JOINT (module docstring): ``{"a", "b", "persona",
    "delta" (b minus a, sessions), "ci95", "seeds", "mcnemar": {...}, "significant"}``."""
    per = _per_seed(runs)
    methods = sorted({m for m, _ in per})
    personas = sorted({p for _, p in per}, key=lambda p: (p == JOINT, p))
    out = []
    for a, b in itertools.combinations(methods, 2):
        for persona in personas:
            sa, sb = per.get((a, persona)), per.get((b, persona))
            if not sa or not sb:
                continue
            d = paired_delta({str(s): v["sessions"] for s, v in sa.items()},
                             {str(s): v["sessions"] for s, v in sb.items()})
            pa = {f"{s}:{i}": bool(c) for s, v in sa.items() for i, c in enumerate(v["curve"])}
            pb = {f"{s}:{i}": bool(c) for s, v in sb.items() for i, c in enumerate(v["curve"])}
            m = mcnemar_exact(pa, pb)
            lo, hi = d["ci95"]
            t_sig = not (math.isnan(lo) or lo <= 0 <= hi)
            out.append({"a": a, "b": b, "persona": persona, "delta": d["delta"], "ci95": [lo, hi], "seeds": d["n"],
                        "mcnemar": m, "significant": t_sig or m["p_value"] < ALPHA,
                        "significant_sessions": t_sig, "significant_first_replies": m["p_value"] < ALPHA})
    return out


def _fmt(x: float | None, f: str = ".1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, f)


def _misses_text(misses: dict[str, float] | None, top: int = 3) -> str:
    """The ``top`` reasons as shares of all first replies: ``"cut_off 0.62, rule 0.31"``."""
    if misses is None:
        return "-"
    return ", ".join(f"{k} {v:.2f}" for k, v in list(misses.items())[:top]) or "none"


def table_lines(runs: list[dict]) -> list[str]:
    """The Markdown table (one row per method and persona, then the significant differences)."""
    agg = aggregate(runs)
    n = runs[0]["sessions"] if runs else 0
    rules = {name: p["rule"] for r in runs for name, p in r["personas"].items()}
    lines = [f"Sessions to stable (first session after which the rule held {runs[0]['streak'] if runs else 3} "
             f"times in a row; lower is better; not reached within {n} counts as {n} in the mean and shows as >{n})",
             "",
             "| method | persona | sessions to stable, mean [95% CI] | seeds (reached) | per seed | pass rate | "
             "first replies missed: why | held-out before -> after |", "|---|---|---|---|---|---|---|---|"]
    for method in sorted(agg):
        for persona in sorted(agg[method], key=lambda p: (p == JOINT, p)):
            r = agg[method][persona]
            lines.append(f"| {method} | {persona} | {_fmt(r['mean'])} [{_fmt(r['ci95'][0])}, {_fmt(r['ci95'][1])}] | "
                         f"{r['seeds']} ({r['reached']}) | {', '.join(('' if ok else '>') + _fmt(v, 'g') for v, ok in zip(r['values'], r['reached_per_seed']))} | "
                         f"{_fmt(r['pass_rate'], '.2f')} | {_misses_text(r['misses'])} | "
                         f"{_fmt(r['heldout_before'], '.2f')} -> "
                         f"{_fmt(r['heldout_after'], '.2f')} |")
    lines += ["", "Rules: " + "; ".join(f"{k}: {v}" for k, v in sorted(rules.items())), ""]
    cut = sorted(f"{m} {p}" for m, per in agg.items() for p, r in per.items()
                 if p != JOINT and (r["misses"] or {}).get("cut_off", 0) >= CUT_OFF_NOTE)
    if cut:
        budget = f"{runs[0]['max_tokens']}-token reply budget" if runs[0].get("max_tokens") else "reply budget"
        lines += [f"Most first replies were cut by the {budget} ({', '.join(cut)}: cut_off >= "
                  f"{CUT_OFF_NOTE:.0%} of first replies). The users reject a reply that stops mid-sentence, so "
                  "these rows measure the budget more than the method; a larger --max-tokens leaves room to "
                  "finish.", ""]
    sig = [c for c in comparisons(runs) if c["significant"]]
    lines.append("Significant differences (sessions to stable paired by seed, t 95% interval excluding 0; "
                 f"first replies paired by seed and session, exact McNemar p < {ALPHA}):")
    lines += [f"- {c['persona']}: {c['b']} - {c['a']} = {_fmt(c['delta'])} sessions "
              f"[{_fmt(c['ci95'][0])}, {_fmt(c['ci95'][1])}], McNemar p = {c['mcnemar']['p_value']:.3g} "
              f"({c['mcnemar']['improved']} first replies better with {c['b']}, {c['mcnemar']['worsened']} worse)"
              for c in sig] or ["- no significant difference"]
    return lines


def plot_curves(runs: list[dict], path: Path) -> Path:
    """Pass rate per session (mean over seeds) per method, one panel per persona and one for
    JOINT (with several personas); writes ``path`` (PNG) and returns it."""
    import matplotlib  # heavy; only the report needs it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per = _per_seed(runs)
    personas = sorted({p for _, p in per}, key=lambda p: (p == JOINT, p))
    fig, axes = plt.subplots(1, len(personas), figsize=(4.5 * len(personas), 3.6), squeeze=False)
    for ax, persona in zip(axes[0], personas):
        for method in sorted({m for m, _ in per}):
            seeds = per.get((method, persona))
            if not seeds:
                continue
            width = len(runs[0]["personas"]) if persona == JOINT else 1
            curves = [v["curve"] for v in seeds.values()]
            n = len(curves[0]) // width
            rate = [sum(c[k * n + i] for c in curves for k in range(width)) / (len(curves) * width)
                    for i in range(n)]
            ax.plot(range(1, n + 1), rate, marker="o", markersize=3, label=method)
        ax.set_title(persona)
        ax.set_xlabel("session")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(-0.05, 1.05)
    axes[0][0].set_ylabel("first reply passes (mean over seeds)")
    axes[0][-1].legend(fontsize=8)
    seeds = sorted({r["seed"] for r in runs})
    fig.suptitle(f"{', '.join(sorted({str(r.get('model', '?')) for r in runs}))}: {runs[0]['sessions']} sessions, "
                 f"{runs[0].get('max_tokens', '?')}-token replies, seeds {', '.join(map(str, seeds))}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)
