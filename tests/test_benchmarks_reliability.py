"""Smoke runs of the reliability benchmarks (``benchmarks/load.py``, ``burst.py``, ``soak.py``) at the
smallest scale: each is run as a user runs it (its own process, the real server) and must pass its
own consistency checks (exit 0, every check true in its ``--json``). No timing is asserted. Each
takes 35-80 s on a shared 2-core machine (server start, weight folders, traffic), hence ``slow``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(script: str, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / f"{script}.json"
    proc = subprocess.run([sys.executable, f"benchmarks/{script}.py", *args, "--json", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    res = json.loads(out.read_text())
    assert res["passed"] and all(res["checks"].values()), res["checks"]
    return res


@pytest.fixture(scope="module")
def weights_dir(tmp_path_factory):
    """One set of update folders for the load and soak runs (each benchmark reuses a complete folder)."""
    return tmp_path_factory.mktemp("weights")


@pytest.mark.slow
def test_load_smoke(tmp_path, weights_dir):
    res = _run("load", tmp_path, "--sessions", "4", "--updates", "1", "--weights-dir", str(weights_dir))
    assert res["requests_ok"] == 12 and res["requests_failed"] == 0
    assert res["store"]["turns"] == {"main": 12} and sum(res["store"]["next_states"].values()) == 8
    assert [u["status"] for u in res["updates"]] == [200]


@pytest.mark.slow
def test_burst_smoke(tmp_path):
    res = _run("burst", tmp_path, "--max-running-requests", "1", "--max-queued-requests", "1", "--max-tokens", "16")
    assert res["burst"] == 8 and res["completed"] + res["rejected_429"] == 8 and res["rejected_429"] >= 6
    assert res["retry_after_values"] == ["1"]


@pytest.mark.slow
@pytest.mark.exhaustive  # the longest benchmark smoke (make test-exhaustive)
def test_soak_smoke(tmp_path, weights_dir):
    res = _run("soak", tmp_path, "--minutes", "0.3", "--update-seconds", "5", "--weights-dir", str(weights_dir))
    assert res["requests"]["unexpected"] == 0 and res["requests"]["ok"] > 0
    assert res["requests"]["expected_4xx"] > 0 and res["updates"]
    assert len(res["series"]) >= 2
