"""Shared parts of the reliability benchmarks (``load.py``, ``burst.py``, ``soak.py``, issue 16).

Weight folders for live updates, the admin call that publishes them, Prometheus counters from
``GET /metrics``, the server's resident memory, the trajectory store read back with plain SQL, and
percentiles. Every helper talks to the real server or the real files; nothing is simulated.
"""

from __future__ import annotations

import math
import sqlite3
import sys
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # `python benchmarks/x.py` finds openclaw_rl and tests.support

STORE_FILE = "trajectories.sqlite"


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile of ``values`` (``q`` in [0, 1]); None when empty."""
    if not values:
        return None
    xs = sorted(values)
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def prepare_weights(model_path: str, weights_dir: Path, count: int, scale: float = 0.02) -> list[Path]:
    """Save ``count`` perturbed copies of the model as Hugging Face folders under ``weights_dir``.

    Folder ``k`` (``weights-<k>``, k = 1..count) holds the model with Gaussian noise of standard
    deviation ``scale`` times each tensor's own standard deviation added (seed ``k``), plus the
    tokenizer: a real, loadable checkpoint of the served architecture. A folder that already holds
    ``config.json`` and a ``.complete`` marker is reused, so repeated runs with the same
    ``--weights-dir`` skip the saving.

    Args:
        model_path: what the server serves (``builtin:`` name or folder).
        weights_dir: parent folder (created); pass it to the server as ``--weights-dir``.
        count: number of folders.
        scale: relative noise level.

    Returns:
        The folders, in publishing order.
    """
    import torch

    from openclaw_rl.models import load_model, load_tokenizer

    weights_dir.mkdir(parents=True, exist_ok=True)
    folders = [weights_dir / f"weights-{k}" for k in range(1, count + 1)]
    missing = [f for f in folders if not (f / ".complete").exists()]
    if not missing:
        return folders
    tokenizer = load_tokenizer(model_path)
    for folder in missing:
        k = int(folder.name.split("-")[1])
        model = load_model(model_path)
        gen = torch.Generator().manual_seed(k)
        with torch.no_grad():
            for p in model.parameters():
                if p.numel() > 1:
                    p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * (scale * float(p.std())))
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        (folder / ".complete").write_text("ok\n")
    return folders


def admin_root(base_url: str) -> str:
    """The server root (``http://host:port``) from its ``/v1`` base URL."""
    return base_url.removesuffix("/v1")


async def update_weights(client: httpx.AsyncClient, base_url: str, api_key: str | None, folder: Path,
                         version: int) -> tuple[int, float, str]:
    """``POST /admin/update_weights_from_disk`` with ``{"model_path", "weight_version"}``.

    Returns ``(status, seconds, body text)``; never raises for an HTTP status (the caller checks).
    """
    import time

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    t0 = time.perf_counter()
    r = await client.post(f"{admin_root(base_url)}/admin/update_weights_from_disk", headers=headers,
                          json={"model_path": str(folder), "weight_version": version}, timeout=600)
    return r.status_code, time.perf_counter() - t0, r.text


def metrics(base_url: str) -> dict[str, float]:
    """Every un-labelled sample of the server's ``GET /metrics`` as ``{name: value}``."""
    from tests.support.metrics import metrics as read_metrics

    return read_metrics(admin_root(base_url))


def rss_mb(pid: int) -> float:
    """Resident set size of process ``pid`` in MiB (``VmRSS`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def store_bytes(buffer_dir: Path) -> int:
    """Bytes on disk of the trajectory store: the database plus its ``-wal`` and ``-shm`` files."""
    return sum(p.stat().st_size for p in buffer_dir.glob(STORE_FILE + "*") if p.is_file())


def store_summary(buffer_dir: Path) -> dict:
    """What the store recorded, read with plain SQL (read-only; safe while the server runs).

    Returns ``{"turns": {turn_type: n}, "next_states": {role: n}, "weight_versions": {v: n},
    "sessions": n}``; ``next_states`` counts turns whose next state was linked, by its role.
    """
    db = sqlite3.connect(f"file:{buffer_dir / STORE_FILE}?mode=ro", uri=True, timeout=30)
    try:
        turns = dict(db.execute("SELECT turn_type, count(*) FROM turns GROUP BY turn_type"))
        nexts = dict(db.execute("SELECT next_state_role, count(*) FROM turns WHERE next_state IS NOT NULL "
                                "GROUP BY next_state_role"))
        versions = dict(db.execute("SELECT weight_version, count(*) FROM turns GROUP BY weight_version"))
        sessions = db.execute("SELECT count(*) FROM sessions").fetchone()[0]
    finally:
        db.close()
    return {"turns": turns, "next_states": nexts, "weight_versions": {int(k): v for k, v in versions.items()},
            "sessions": sessions}


def finish(summary: dict, json_path: Path | None) -> int:
    """Print ``summary["checks"]`` (:func:`report_checks`), write ``summary`` as JSON to
    ``json_path`` when given; returns the exit status (0 when every check passed, else 1)."""
    import json

    ok = report_checks(summary["checks"])
    if json_path:
        json_path.write_text(json.dumps(summary, indent=2, default=str) + "\n")
        print(f"wrote {json_path}")
    return 0 if ok else 1


def report_checks(checks: dict[str, bool]) -> bool:
    """Print each named check as ``ok`` / ``FAILED``; returns True when all passed."""
    print("\nchecks:")
    for name, passed in checks.items():
        print(f"  {'ok    ' if passed else 'FAILED'} {name}")
    return all(checks.values())
