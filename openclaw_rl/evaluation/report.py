"""The evaluation's outputs: ``results.json``, a Markdown table (printed and saved) and a PNG bar chart.

``results.json`` layout::

    {"created", "command", "settings", "wall_s",
     "models": [{"key", "label", "spec", "kind"}],
     "tasks": {task: {"metric", "kind"}},
     "results": {task: {model_key: {"metric", "value", "n", "ci95": [lo, hi], "errors", "wall_s",
                                    "groups": {group: {"value", "n", "ci95"}}}}},
     "deltas": {task: {model_key: {"vs", "delta", "n", "ci95"}}}}   # models 2.. minus model 1

Intervals are 95%: Wilson for proportions, Student's t for mean ratings and for the paired
per-item differences of the deltas (see :mod:`openclaw_rl.evaluation.stats`).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _num(x: float, digits: int = 3) -> str:
    return "n/a" if _missing(x) else f"{x:.{digits}f}"


def _cell(r: dict) -> str:
    lo, hi = r["ci95"]
    err = f", {r['errors']} errors" if r.get("errors") else ""
    return f"{_num(r['value'])} [{_num(lo)}, {_num(hi)}] (n={r['n']}{err})"


def markdown_table(payload: dict) -> str:
    """The results as Markdown: one row per task (and per group), one column per model; then the
    deltas against the first model when several are compared, and wall times."""
    models = payload["models"]
    head = "| task | metric | " + " | ".join(m["label"] for m in models) + " |"
    lines = [head, "|" + "---|" * (len(models) + 2)]
    for task, per_model in payload["results"].items():
        metric = payload["tasks"][task]["metric"]
        lines.append(f"| **{task}** | {metric} | " + " | ".join(
            _cell(per_model[m["key"]]) if m["key"] in per_model else "-" for m in models) + " |")
        groups = sorted({g for r in per_model.values() for g in r.get("groups", {})})
        if len(groups) > 1:
            for g in groups:
                lines.append(f"| &nbsp;&nbsp;{task}/{g} | {metric} | " + " | ".join(
                    _cell(per_model[m["key"]]["groups"][g]) if g in per_model.get(m["key"], {}).get("groups", {})
                    else "-" for m in models) + " |")
    out = "\n".join(lines)
    if len(models) > 1 and payload.get("deltas"):
        first = models[0]["label"]
        rows = ["| task | " + " | ".join(f"{m['label']} - {first}" for m in models[1:]) + " |",
                "|" + "---|" * len(models)]
        for task, per_model in payload["deltas"].items():
            cells = []
            for m in models[1:]:
                d = per_model.get(m["key"])
                cells.append("-" if d is None else
                             f"{d['delta']:+.3f} [{_num(d['ci95'][0])}, {_num(d['ci95'][1])}] (n={d['n']})"
                             if not _missing(d["delta"]) else f"n/a (n={d['n']})")
            rows.append(f"| {task} | " + " | ".join(cells) + " |")
        out += ("\n\nPaired differences on the same items (95% t interval):\n\n" + "\n".join(rows))
    walls = []
    for task, per_model in payload["results"].items():
        walls += [f"{task} on {m['label']}: {per_model[m['key']]['wall_s']:.1f}s" for m in models
                  if m["key"] in per_model]
    out += "\n\nWall time: " + "; ".join(walls) + f"; total {payload.get('wall_s', 0):.1f}s (this invocation)."
    return out


def bar_chart(payload: dict, path: str | os.PathLike) -> Path:
    """Grouped bars (one panel per task, one bar per model) with 95% intervals as error bars; PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(payload["results"])
    models = payload["models"]
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(3.2 * max(1, len(tasks)) + 1, 3.6), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, task in zip(axes[0], tasks):
        per_model = payload["results"][task]
        kind = payload["tasks"][task]["kind"]
        for i, m in enumerate(models):
            r = per_model.get(m["key"])
            if r is None or _missing(r["value"]):
                continue
            lo, hi = r["ci95"]
            err = None if _missing(lo) else [[r["value"] - lo], [hi - r["value"]]]
            floor = 0.0 if kind == "proportion" else 1.0  # ratings start at 1
            ax.bar(i, r["value"] - floor, bottom=floor, color=colors[i % len(colors)], yerr=err, capsize=4,
                   label=m["label"])
            ax.annotate(f"{r['value']:.2f}", (i, r["value"]), textcoords="offset points", xytext=(6, 3), fontsize=8)
        ax.set_title(task)
        ax.set_ylabel(payload["tasks"][task]["metric"])
        ax.set_xticks([])
        ax.set_ylim(*((0, 1) if kind == "proportion" else (1, 5)))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(models)), fontsize=8)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _json_safe(x):
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def write_report(payload: dict, out_dir: str | os.PathLike, *, chart: bool = True) -> dict[str, Path]:
    """Write ``results.json`` (NaN as null), ``results.md`` and ``results.png`` into ``out_dir``.

    Returns:
        ``{"json": path, "markdown": path, "png": path}`` (``png`` absent when ``chart`` is False).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "markdown": out / "results.md"}
    tmp = out / ".results.json.tmp"
    tmp.write_text(json.dumps(_json_safe(payload), indent=2))
    os.replace(tmp, paths["json"])
    paths["markdown"].write_text(markdown_table(payload) + "\n")
    if chart:
        paths["png"] = bar_chart(payload, out / "results.png")
    return paths
