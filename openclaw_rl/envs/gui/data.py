"""gui-rl task lists: MiniWoB++ pages x seeds as prompt rows, and upstream-style meta files.

* Meta files (``GUI_TRAIN_META_PATH`` / ``GUI_EVAL_META_PATH``, OSWorld's ``test_all.json``
  shape): ``{"miniwob": ["click-button", ...]}``; :func:`build_default` writes
  ``train_miniwob.json`` and ``test_miniwob.json`` from the split of
  :func:`openclaw_rl.envs.gui.miniwob_tasks.split_of` (102 / 28 pages in miniwob 1.1, disjoint).
* Rows (``--prompt-data``): ``{"prompt", "label": "", "metadata": {"env_type": "gui", "task_key":
  "<page>#<seed>", "task_config": {"task", "seed", "data_mode"}, "group": <page>, "input": basic|drag|...}}``;
  training seeds 0..9 with MiniWoB's ``train`` data mode, evaluation seeds 1000..1002 with ``test``.

:func:`dataset_path` (the ``gui`` family's data): the default lists are built once into
``$OPENCLAW_RL_CACHE/data/gui-v1/``; ``GUI_TRAIN_META_PATH`` / ``GUI_EVAL_META_PATH`` replace a
split's pages (rows cached by the meta file's content hash).

CLI: ``python -m openclaw_rl.envs.gui.data --meta META.json --out rows.jsonl [--seeds 0-9]
[--data-mode train]`` converts a meta file to rows (the launch script does this for
``GUI_TRAIN_META_PATH``); a bad file is a one-line error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from openclaw_rl.envs.gui import miniwob_tasks as mw

__all__ = ["TRAIN_SEEDS", "EVAL_SEEDS", "build_default", "dataset_path", "meta_pages", "rows_for"]

VERSION = "1"

TRAIN_SEEDS = range(0, 10)
EVAL_SEEDS = range(1000, 1003)


def rows_for(pages: list[str], seeds, data_mode: str) -> list[dict]:
    """One prompt row per (page, seed) (module docstring)."""
    rows = []
    for page in pages:
        for seed in seeds:
            rows.append({"prompt": f"MiniWoB++ {page} (seed {seed})", "label": "",
                         "metadata": {"env_type": "gui", "task_key": f"{page}#{seed}",
                                      "task_config": {"task": page, "seed": seed, "data_mode": data_mode},
                                      "group": page, "input": mw.input_kind(page)}})
    return rows


def meta_pages(path: str | Path) -> list[str]:
    """The page names of a meta file (``{"miniwob": [...]}``, or a plain list).

    Raises:
        ValueError: unreadable, not that shape, or an unknown page (one line).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable JSON meta file: {exc}") from None
    names = data.get("miniwob") if isinstance(data, dict) else data
    if not isinstance(names, list) or not names:
        raise ValueError(f"{path}: expected {{\"miniwob\": [page names]}}")
    return [mw.normalise_task(n) for n in names]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def build_default(out_dir: Path) -> None:
    """Write ``train.jsonl``, ``eval.jsonl``, ``train_miniwob.json``, ``test_miniwob.json`` and
    ``pages.json`` (every page's split and input kind) into ``out_dir``."""
    out_dir = Path(out_dir)
    train, held = mw.task_pages("train"), mw.task_pages("eval")
    assert not set(train) & set(held)
    (out_dir / "train_miniwob.json").write_text(json.dumps({"miniwob": train}, indent=1))
    (out_dir / "test_miniwob.json").write_text(json.dumps({"miniwob": held}, indent=1))
    (out_dir / "pages.json").write_text(json.dumps(
        {n: {"split": mw.split_of(n), "input": mw.input_kind(n), "base": mw.base_task(n)} for n in mw.page_names()},
        indent=1))
    _write_jsonl(out_dir / "train.jsonl", rows_for(train, TRAIN_SEEDS, "train"))
    _write_jsonl(out_dir / "eval.jsonl", rows_for(held, EVAL_SEEDS, "test"))


def dataset_path(split: str, environ=None) -> Path:
    """The ``train`` or ``eval`` JSONL of the ``gui`` family (module docstring), built on first use.

    Raises:
        ValueError: a bad split or meta file.
    """
    import hashlib
    import os

    from openclaw_rl.models import _atomic_build, _file_lock, cache_dir

    if split not in ("train", "eval"):
        raise ValueError(f"split must be train or eval, got {split!r}")
    env = os.environ if environ is None else environ
    root = cache_dir().parent / "data"
    root.mkdir(parents=True, exist_ok=True)
    meta = (env.get("GUI_TRAIN_META_PATH" if split == "train" else "GUI_EVAL_META_PATH") or "").strip()
    if meta:
        pages = meta_pages(meta)
        digest = hashlib.sha256(json.dumps([VERSION, split, pages]).encode()).hexdigest()[:16]
        out = root / f"gui-meta-{split}-{digest}.jsonl"
        if not out.exists():
            tmp = out.with_suffix(f".tmp{os.getpid()}")
            _write_jsonl(tmp, rows_for(pages, TRAIN_SEEDS if split == "train" else EVAL_SEEDS,
                                       "train" if split == "train" else "test"))
            os.replace(tmp, out)
        return out
    target = root / f"gui-v{VERSION}"
    with _file_lock(root / ".gui.lock"):
        if not (target / ".complete").exists():
            _atomic_build(target, build_default)
    return target / f"{split}.jsonl"


def _seeds(text: str) -> range:
    lo, _, hi = text.partition("-")
    try:
        return range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must be N or N-M, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    """``--meta META --out ROWS [--seeds 0-9] [--data-mode train]`` (module docstring)."""
    p = argparse.ArgumentParser(prog="python -m openclaw_rl.envs.gui.data")
    p.add_argument("--meta", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seeds", type=_seeds, default=TRAIN_SEEDS)
    p.add_argument("--data-mode", choices=["train", "test"], default="train")
    args = p.parse_args(argv)
    try:
        rows = rows_for(meta_pages(args.meta), args.seeds, args.data_mode)
        _write_jsonl(Path(args.out), rows)
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
