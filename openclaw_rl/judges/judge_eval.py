"""``openclaw-rl judge-eval``: measure every judge mode on a judge case file.

For each PRM mode: accuracy (voted verdict == expected), balanced accuracy (mean recall of the
three verdicts: "always -1" scores 1/3 here however the labels are spread), the recall of ``-1``
and of ``+1``, the sign-flip rate (the share of cases whose verdict has the opposite sign of the
expected one: a ``+1`` case voted ``-1`` or the reverse; such a vote trains the policy toward what
the user rejected), the invalid-vote rate (votes the parser could not read) and the confusion
counts (expected verdict x voted verdict); then the accuracy per case tag and per language (a
case's ``lang:<code>`` tag, else ``en``), one column per mode.
For each hint mode (``--hint-modes``): on the user corrections that carry ``hint_terms``, the
share accepted and the share whose hint names what the user wanted (one of the terms), plus the
share of non-corrections (``expected`` 1 or 0) that got a hint anyway.

    openclaw-rl judge-eval [--cases FILE.jsonl] [--tags original] [--modes classifier,lexical,...]
                           [--model-path builtin:smollm2-135m] [--hint-modes extractive,model]
                           [-n 1] [--json] [--verbose]

Without ``--cases`` it reads the extended set shipped with the package
(:data:`~openclaw_rl.judges.cases.DEFAULT_CASES_PATH`). Bad input (missing file, a line that is
not JSON, a bad field, an unknown mode) is a one-line error naming ``file:line``, exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any, Sequence

from openclaw_rl.judges.cases import JudgeCase, load_cases
from openclaw_rl.judges.voting import majority_vote

__all__ = ["evaluate_prm", "evaluate_hints", "format_prm_table", "format_group_table", "format_hint_table", "main",
           "EVAL_PRM_MODES", "HINT_MODES"]

#: PRM modes judge-eval knows (``endpoint`` needs ``--prm-url``)
EVAL_PRM_MODES = ("classifier", "probe", "lexical", "hybrid", "prototype", "channel", "logprob", "generate", "endpoint")
#: hint modes: ``extractive`` (no model), ``model`` (the structured local judge, or the endpoint
#: at ``--judge-url``)
HINT_MODES = ("extractive", "model")
_V = (1, -1, 0)


async def evaluate_prm(backend, cases: Sequence[JudgeCase], n: int = 1, threshold: float = 0.5) -> dict[str, Any]:
    """Judge every case with ``backend`` (its ``score_input``) and majority voting.

    Args:
        backend: a :class:`~openclaw_rl.judges.backends.JudgeBackend`.
        cases: the judge cases. n: votes per case (>= 1). threshold: majority threshold.

    Returns:
        ``{"mode", "backend", "cases", "accuracy", "balanced_accuracy", "recall": {"1", "-1", "0"},
        "sign_flip_rate", "invalid_rate", "confusion": {"1": {"1": k, "-1": k, "0": k}, ...}
        (expected -> voted), "per_tag": {tag: {"n", "correct", "accuracy"}}, "per_lang": {lang: {...}},
        "seconds", "per_case": [{name, expected, verdict, votes, probs, text}]}``.
    """
    t0 = time.perf_counter()
    rows, invalid, total = [], 0, 0
    conf = {e: {v: 0 for v in _V} for e in _V}
    groups: dict[str, dict[str, dict[str, int]]] = {"per_tag": {}, "per_lang": {}}
    for case in cases:
        res = await backend.score_input(case.judge_input(), n)
        vote = majority_vote(res.votes, threshold)
        invalid += vote.n_invalid
        total += len(res.votes)
        conf[case.expected][vote.verdict] += 1
        for kind, keys in (("per_tag", [t for t in case.tags if not t.startswith("lang:")]), ("per_lang", [case.lang])):
            for key in keys:
                g = groups[kind].setdefault(key, {"n": 0, "correct": 0})
                g["n"] += 1
                g["correct"] += int(vote.verdict == case.expected)
        rows.append({"name": case.name, "expected": case.expected, "verdict": vote.verdict, "votes": list(res.votes),
                     "probs": None if res.probs is None else {str(k): round(p, 4) for k, p in res.probs.items()},
                     "text": (res.texts[0][:200] if res.texts else None)})
    correct = sum(conf[e][e] for e in _V)
    recalls = [conf[e][e] / sum(conf[e].values()) for e in _V if sum(conf[e].values())]
    for kind in groups.values():
        for g in kind.values():
            g["accuracy"] = g["correct"] / g["n"]
    return {"mode": getattr(backend, "mode", ""), "backend": getattr(backend, "name", type(backend).__name__),
            "cases": len(rows), "accuracy": correct / max(1, len(rows)),
            "balanced_accuracy": sum(recalls) / max(1, len(recalls)),
            "recall": {str(e): conf[e][e] / sum(conf[e].values()) if sum(conf[e].values()) else None for e in _V},
            "sign_flip_rate": (conf[1][-1] + conf[-1][1]) / max(1, len(rows)), **groups,
            "invalid_rate": invalid / max(1, total),
            "confusion": {str(e): {str(v): conf[e][v] for v in _V} for e in _V},
            "seconds": round(time.perf_counter() - t0, 4), "per_case": rows}


async def evaluate_hints(hint_judge, cases: Sequence[JudgeCase]) -> dict[str, Any]:
    """Run a :class:`~openclaw_rl.judges.hints.HintJudge` on every case.

    Returns:
        ``{"mode", "corrections": k (user cases with expected -1 and hint_terms), "accepted": share
        of them with a hint, "names_preference": share of them whose hint contains one of the
        case's ``hint_terms``, "others": k (cases with expected 1 or 0), "false_accept": share of
        them with a hint, "seconds", "per_case": [{name, expected, accepted, hint, named}]}``.
    """
    t0 = time.perf_counter()
    rows = []
    for case in cases:
        j = await hint_judge.judge_input(case.judge_input())
        rows.append({"name": case.name, "expected": case.expected, "role": case.role, "accepted": j.accepted,
                     "hint": j.hint, "named": case.names_preference(j.hint) if j.accepted else False,
                     "scored": case.expected == -1 and case.role == "user" and bool(case.hint_terms)})
    scored = [r for r in rows if r["scored"]]
    others = [r for r in rows if r["expected"] != -1]
    return {"mode": getattr(hint_judge.backend, "mode", ""), "corrections": len(scored),
            "accepted": sum(r["accepted"] for r in scored) / max(1, len(scored)),
            "names_preference": sum(r["named"] for r in scored) / max(1, len(scored)),
            "others": len(others), "false_accept": sum(r["accepted"] for r in others) / max(1, len(others)),
            "seconds": round(time.perf_counter() - t0, 1), "per_case": rows}


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def format_prm_table(results: Sequence[dict]) -> str:
    """A fixed-width table of :func:`evaluate_prm` results (one row per mode), then the accuracy per
    tag and per language (:func:`format_group_table`)."""
    head = (f"{'mode':<10} {'cases':>5} {'accuracy':>8} {'balanced':>8} {'rec -1':>6} {'rec +1':>6} {'flips':>6} "
            f"{'invalid':>7}   {'confusion expected: voted +1/-1/0':<40} {'ms/case':>7}")
    lines = [head, "-" * len(head)]
    for r in results:
        c = r["confusion"]
        conf = "  ".join(f"{e:>2}: {c[e]['1']}/{c[e]['-1']}/{c[e]['0']}" for e in ("1", "-1", "0"))
        conf = conf.replace(" 1:", "+1:", 1)
        rec = r.get("recall", {})
        lines.append(f"{r['mode']:<10} {r['cases']:>5} {r['accuracy']:>8.3f} {r['balanced_accuracy']:>8.3f} "
                     f"{_rate(rec.get('-1')):>6} {_rate(rec.get('1')):>6} {r.get('sign_flip_rate', 0.0):>6.3f} "
                     f"{r['invalid_rate']:>7.3f}   {conf:<40} {1000 * r['seconds'] / max(1, r['cases']):>7.1f}")
    for kind, title in (("per_tag", "tag"), ("per_lang", "language")):
        if any(r.get(kind) for r in results):
            lines += ["", format_group_table(results, kind, title)]
    return "\n".join(lines)


def format_group_table(results: Sequence[dict], kind: str = "per_tag", title: str = "tag") -> str:
    """Accuracy per group (``kind``: ``"per_tag"`` or ``"per_lang"``), one row per group (sorted),
    one column per mode: ``accuracy (n)``."""
    keys = sorted({k for r in results for k in r.get(kind, {})})
    width = max([len(title)] + [len(k) for k in keys])
    head = f"{title:<{width}} {'n':>4}  " + "  ".join(f"{r['mode']:>10}" for r in results)
    lines = [head, "-" * len(head)]
    for k in keys:
        n = next(r[kind][k]["n"] for r in results if k in r.get(kind, {}))
        cells = "  ".join(f"{_rate(r.get(kind, {}).get(k, {}).get('accuracy')):>10}" for r in results)
        lines.append(f"{k:<{width}} {n:>4}  {cells}")
    return "\n".join(lines)


def format_hint_table(results: Sequence[dict]) -> str:
    """A fixed-width table of :func:`evaluate_hints` results (one row per hint mode)."""
    head = f"{'hint mode':<11} {'corrections':>11} {'accepted':>8} {'names pref.':>11} {'others':>6} {'false accept':>12}"
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r['mode']:<11} {r['corrections']:>11} {r['accepted']:>8.3f} {r['names_preference']:>11.3f} "
                     f"{r['others']:>6} {r['false_accept']:>12.3f}")
    return "\n".join(lines)


def _split(value: str, allowed: Sequence[str], flag: str) -> list[str]:
    items = [m.strip() for m in value.split(",") if m.strip()]
    if items == ["all"]:
        return list(allowed)
    bad = [m for m in items if m not in allowed]
    if bad:
        raise ValueError(f"{flag}: unknown mode(s) {', '.join(bad)}; choose from {', '.join(allowed)} or all")
    return items


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="openclaw-rl judge-eval", description=__doc__.splitlines()[0])
    p.add_argument("--cases", default=None, help="judge case file, JSON Lines (default: the shipped extended set)")
    p.add_argument("--tags", default=None, help="only cases with one of these tags (comma-separated), e.g. original")
    p.add_argument("--modes", default="classifier,lexical,hybrid,prototype,channel,logprob",
                   help=f"PRM modes, comma-separated, or all ({', '.join(EVAL_PRM_MODES)})")
    p.add_argument("--hint-modes", default="",
                   help="hint modes to measure too: extractive, model (the structured local judge on --model-path, "
                        "or the endpoint at --prm-url), or all")
    p.add_argument("--model-path", default=None,
                   help="local judge model (default $PRM_MODEL_PATH or builtin:smollm2-135m)")
    p.add_argument("--prm-url", default=None, help="OpenAI-compatible endpoint for the endpoint mode")
    p.add_argument("--prm-model-name", default="default", help="model name at --prm-url")
    p.add_argument("--prm-api-key", default=None)
    p.add_argument("-n", "--votes", type=int, default=1, help="votes per case (like --majority-vote-n; default 1)")
    p.add_argument("--threshold", type=float, default=0.5, help="majority threshold (default 0.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--verbose", action="store_true", help="with --json: include every case's verdict")
    return p


async def _run(a, cases: list[JudgeCase], modes: list[str], hint_modes: list[str]) -> dict:
    from openclaw_rl.judges.backends import OpenAIJudgeBackend, default_prm_model_path
    from openclaw_rl.judges.hints import HintJudge
    from openclaw_rl.judges.modes import make_local_backend

    path = a.model_path or default_prm_model_path()
    shared: dict[str, Any] = {}

    def local(mode: str):
        backend = make_local_backend(mode, path, seed=a.seed, **shared)
        inner = getattr(backend, "fallback", backend)
        if not shared and hasattr(inner, "model"):  # load the judge model once for every mode
            shared.update(model=inner.model, tokenizer=inner.tokenizer)
        return backend

    prm, hints = [], []
    for mode in modes:
        if mode == "endpoint":
            backend = OpenAIJudgeBackend(a.prm_url, a.prm_model_name, api_key=a.prm_api_key, seed=a.seed)
        else:
            backend = local(mode)
        try:
            prm.append(await evaluate_prm(backend, cases, a.votes, a.threshold))
        finally:
            if mode == "endpoint":
                await backend.aclose()
    for mode in hint_modes:
        if mode == "extractive":
            from openclaw_rl.judges.hint_extract import ExtractiveHintBackend
            backend = ExtractiveHintBackend()
        elif a.prm_url:
            backend = OpenAIJudgeBackend(a.prm_url, a.prm_model_name, api_key=a.prm_api_key, seed=a.seed)
        else:
            from openclaw_rl.judges.hint_backend import StructuredHintBackend
            backend = StructuredHintBackend(path, seed=a.seed, **shared)
        hints.append(await evaluate_hints(HintJudge(backend, majority_vote_n=a.votes), cases))
    return {"prm": prm, "hints": hints}


def main(argv: list[str] | None = None) -> int:
    """The ``judge-eval`` command (module docstring); returns the exit status.

    Raises:
        ValueError: bad input (the console entry point prints it as one line, exit 2):
            :class:`~openclaw_rl.judges.cases.CaseFormatError` naming ``file:line``, unknown
            modes, ``--prm-url`` missing for ``endpoint``, ``-n < 1``, ``--torch-threads < 1``.
    """
    a = _parser().parse_args(argv)
    cases = load_cases(a.cases, set(a.tags.split(",")) if a.tags else None)
    if not cases:
        raise ValueError(f"no case has one of the tags {a.tags!r}")
    modes = _split(a.modes, EVAL_PRM_MODES, "--modes")
    if a.modes.strip() == "all" and not a.prm_url:
        modes.remove("endpoint")
    hint_modes = _split(a.hint_modes, HINT_MODES, "--hint-modes") if a.hint_modes else []
    if "endpoint" in modes and not a.prm_url:
        raise ValueError("--modes endpoint needs --prm-url")
    if a.votes < 1 or not 0.0 <= a.threshold <= 1.0:
        raise ValueError("-n must be >= 1 and --threshold in [0, 1]")
    if a.torch_threads is not None and a.torch_threads < 1:
        raise ValueError(f"--torch-threads must be >= 1, got {a.torch_threads}")
    if a.torch_threads:
        import torch
        torch.set_num_threads(a.torch_threads)
    out = asyncio.run(_run(a, cases, modes, hint_modes))
    src = a.cases or "the extended set"
    if a.json:
        if not a.verbose:
            for r in out["prm"] + out["hints"]:
                r.pop("per_case")
        print(json.dumps({"cases_file": a.cases, "tags": a.tags, "n_cases": len(cases), "votes": a.votes, **out}))
        return 0
    print(f"judge-eval: {len(cases)} cases from {src}{f' (tags {a.tags})' if a.tags else ''}, {a.votes} vote(s) each")
    if out["prm"]:
        print(format_prm_table(out["prm"]))
    if out["hints"]:
        print()
        print(format_hint_table(out["hints"]))
    sys.stdout.flush()
    return 0
