"""OpenMP wait policy benchmark: spinning (``ACTIVE``) vs sleeping (``PASSIVE``) worker threads.

Run from the repository root::

    python benchmarks/omp_wait.py [--model-path builtin:smollm2-135m] [--tokens 32] [--steps 3]
                                  [--copies 1,2] [--json OUT]

torch's CPU wheel runs its intra-op threads on GNU OpenMP (libgomp). Between two parallel regions
an idle OpenMP thread spins before it sleeps, unless ``OMP_WAIT_POLICY=PASSIVE``. On a CPU that a
policy server, a trainer and judges share (every OpenClaw-RL run on a laptop or a small box), the
spinning threads take the cores the other processes are waiting for. ``openclaw_rl`` and ``slime``
therefore set ``OMP_WAIT_POLICY=PASSIVE`` when the variable is not set (:mod:`slime.omp`).

One workload, each time in a fresh Python process whose environment names the policy: greedy
decoding of ``--tokens`` tokens for 4 chat prompts with ``model.generate`` and ``--steps`` training
steps (forward, backward, AdamW) on the same 4 sequences, with torch's default threads (one per
core). For each ``--copies`` level, that many copies run at once (1: an idle machine; 2: two
processes sharing it, as a server and a trainer do) under each setting of :data:`POLICIES`,
alternating, ``--repeats`` times; printed: the median wall seconds of a copy and its CPU seconds
(user + system), and each setting's ratio to ``default`` (below 1: faster or cheaper).

Numbers depend on the machine and its load; compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from openclaw_rl.models import load_model, load_tokenizer  # noqa: E402

#: the settings compared: name -> the OpenMP variables of the child (``default``: none set, libgomp
#: spins 300,000 iterations before it sleeps; ``spin10k``: 10,000)
POLICIES = {"default": {}, "PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"}, "spin10k": {"GOMP_SPINCOUNT": "10000"},
            "spin1k": {"GOMP_SPINCOUNT": "1000"}}
OMP_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
PROMPTS = ("What is the capital of France?", "Write a haiku about rain.", "Explain recursion in one sentence.",
           "List three prime numbers.")


def workload(model_path: str, tokens: int, steps: int) -> dict:
    """The measured work in this process: returns ``{"decode_s", "train_s"}`` (wall seconds)."""
    tok = load_tokenizer(model_path)
    model = load_model(model_path, dtype=torch.float32)
    texts = [tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
             for p in PROMPTS]
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    batch = tok(texts, return_tensors="pt", padding=True)
    t0 = time.perf_counter()
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                             pad_token_id=tok.pad_token_id)
    decode_s = time.perf_counter() - t0
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    mask = torch.ones_like(out)
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = model(input_ids=out, attention_mask=mask, labels=out).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return {"decode_s": decode_s, "train_s": time.perf_counter() - t0}


def _child(model_path: str, tokens: int, steps: int) -> None:
    out = workload(model_path, tokens, steps)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({**out, "cpu_s": usage.ru_utime + usage.ru_stime}))


def run_level(a: argparse.Namespace, policy: str, copies: int) -> list[dict]:
    """``copies`` children at once under ``policy``; their results (one dict each)."""
    env = {k: v for k, v in os.environ.items() if k not in OMP_VARS} | POLICIES[policy]
    cmd = [sys.executable, __file__, "--child", "--model-path", a.model_path, "--tokens", str(a.tokens),
           "--steps", str(a.steps)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
             for _ in range(copies)]
    rows = []
    for p in procs:
        stdout, _ = p.communicate()
        if p.returncode:
            raise RuntimeError(f"benchmark child failed ({p.returncode})")
        rows.append(json.loads(stdout.strip().splitlines()[-1]))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default="builtin:smollm2-135m")
    p.add_argument("--tokens", type=int, default=32, help="greedy tokens decoded per prompt (4 prompts)")
    p.add_argument("--steps", type=int, default=3, help="training steps on the decoded sequences")
    p.add_argument("--copies", type=lambda v: tuple(int(x) for x in v.split(",")), default=(1, 2),
                   help="processes at once per level (default 1,2)")
    p.add_argument("--repeats", type=int, default=2, help="runs per policy and level (default 2)")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        _child(a.model_path, a.tokens, a.steps)
        return 0
    result = {}
    for copies in a.copies:
        runs: dict[str, list[dict]] = {policy: [] for policy in POLICIES}
        for _ in range(a.repeats):
            for policy in POLICIES:  # alternating, so both see the same background load
                runs[policy] += run_level(a, policy, copies)
        level = {}
        for policy, rows in runs.items():
            level[policy] = {k: statistics.median(r[k] for r in rows) for k in ("decode_s", "train_s", "cpu_s")}
        result[f"copies={copies}"] = level
        for k in ("decode_s", "train_s", "cpu_s"):
            print(f"{copies} at once | {k}: " + " | ".join(
                f"{policy} {level[policy][k]:.2f} (x{level[policy][k] / level['default'][k]:.2f})"
                for policy in POLICIES), flush=True)
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
