"""swe-rl container benchmark: create / exec / diff / evaluate / destroy of a repository container,
in process and through the exec server (HTTP), next to plain subprocesses on a copied repository.

Run from the repository root (as root; bubblewrap and python3-pytest installed by ``make install``)::

    python benchmarks/swe_exec.py [--repeats 10] [--instances 41] [--json OUT]

Measures, p50 and p95, in one process:

1. **create**: a fresh sandboxed copy of an ipi repository (``ContainerManager.create``). Baseline:
   ``shutil.copytree`` of the repository into a temp dir.
2. **exec**: ``cat`` of the repository's source file. Baseline: the same command as a subprocess.
3. **evaluate**: a fresh copy, the (empty) patch, the instance's eval script (pytest). Baseline:
   pytest (the system python3, as in the container) as a subprocess on a copied repository.
4. the same create / exec / evaluate through the exec server's HTTP API (a uvicorn process on loopback).
5. **all instances unresolved unchanged**: every kept instance's eval script on its unchanged
   repository (the oracle's "an unchanged repo does not resolve"); counts and seconds.

The ratios (container / baseline) are the numbers to compare across machines.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openclaw_rl.agentic.sandbox import sandbox_available  # noqa: E402
from openclaw_rl.envs.swe.containers import ContainerManager  # noqa: E402
from openclaw_rl.envs.swe.data import ensure_converted, load_instances  # noqa: E402


def _stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"p50_ms": round(1000 * statistics.median(xs), 1), "p95_ms": round(1000 * xs[int(0.95 * (len(xs) - 1))], 1)}


def _timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints one JSON object (and writes it to ``--json``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--instances", type=int, default=41, help="instances for the unchanged-repo sweep (0: skip)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    ok, why = sandbox_available()
    if not ok:
        print(f"error: no sandbox: {why}", file=sys.stderr)
        return 2
    data = ensure_converted()
    insts = load_instances(data / "swe_train.jsonl") + load_instances(data / "swe_eval.jsonl")
    inst = next(i for i in insts if i["instance_id"] == "ipi-benign-03")
    manager = ContainerManager([data])
    res: dict = {}
    create, execs, evals, base_copy, base_exec, base_eval = [], [], [], [], [], []
    for _ in range(args.repeats):
        dt, cid = _timed(lambda: manager.create(inst["image"], inst["cwd"], 30, inst["env"], inst["files"]))
        create.append(dt)
        execs.append(_timed(lambda: manager.exec(cid, "cat src/itertools_compat.py"))[0])
        evals.append(_timed(lambda: manager.evaluate(cid, "", inst["eval_script"]))[0])
        manager.destroy(cid)
        tmp = Path(tempfile.mkdtemp())
        base_copy.append(_timed(lambda: shutil.copytree(inst["image"], tmp / "w"))[0])
        base_exec.append(_timed(lambda: subprocess.run(["bash", "-c", "cat src/itertools_compat.py"], cwd=tmp / "w",
                                                       capture_output=True))[0])
        base_eval.append(_timed(lambda: subprocess.run(["/usr/bin/python3", "-m", "pytest", "tests/", "-q", "-p", "no:cacheprovider"],
                                                       cwd=tmp / "w", capture_output=True))[0])
        shutil.rmtree(tmp)
    for name, xs, base in (("create", create, base_copy), ("exec", execs, base_exec), ("evaluate", evals, base_eval)):
        res[name] = {**_stats(xs), "baseline": _stats(base),
                     "ratio_p50": round(statistics.median(xs) / max(1e-9, statistics.median(base)), 2)}
    from tests.test_pool_server import serve  # the tests' by-PID server runner

    with tempfile.TemporaryDirectory() as logs, \
            serve(Path(logs), "openclaw_rl.envs.swe.exec_server", "--image-root", str(data)) as (url, _):
        import httpx

        http = httpx.Client(timeout=120)
        hc, he, hv = [], [], []
        for _ in range(args.repeats):
            dt, r = _timed(lambda: http.post(f"{url}/container/create", json={"image": inst["image"]}).json())
            hc.append(dt)
            cid = r["container_id"]
            he.append(_timed(lambda: http.post(f"{url}/container/exec", json={"container_id": cid, "command": "true"}))[0])
            hv.append(_timed(lambda: http.post(f"{url}/container/evaluate", json={
                "container_id": cid, "patch": "", "eval_script": inst["eval_script"]}))[0])
            http.post(f"{url}/container/destroy", json={"container_id": cid})
        res["http"] = {"create": _stats(hc), "exec": _stats(he), "evaluate": _stats(hv)}
    if args.instances:
        t0, unresolved = time.perf_counter(), 0
        for i in insts[:args.instances]:
            cid = manager.create(i["image"], i["cwd"], 30)
            unresolved += not manager.evaluate(cid, "", i["eval_script"])["resolved"]
            manager.destroy(cid)
        res["unchanged"] = {"instances": min(args.instances, len(insts)), "unresolved": unresolved,
                            "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
