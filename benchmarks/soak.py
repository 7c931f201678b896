"""Soak benchmark: mixed traffic for a long time; latency, memory and store size over time.

Run from the repository root::

    python benchmarks/soak.py [--minutes 30] [--clients 4] [--sample-seconds 30] [--update-seconds 60]
                              [--warmup-minutes 2] [--max-tokens 16] [--model-path builtin:tiny-qwen3]
                              [--weights-dir DIR] [--torch-threads 1] [--mix KINDS] [--json OUT]

Issue 16's soak. Starts the real server (capture on, default limits, ``--weights-dir`` set,
``--max-context`` given so the over-long prompt is certainly over) and runs ``--clients`` concurrent
clients for ``--minutes`` (fractions allowed for a smoke run), each cycling through a fixed mix of
sessions (``benchmarks/_soak_traffic.py``): streamed and non-streamed two-turn conversations, a
forced tool call followed by its tool result (a next state with role ``tool``), OpenClaw
housekeeping prompts recorded as side turns, and bad requests (invalid JSON, over-long prompt,
unknown model, a body over ``--max-request-bytes``, wrong API key) that must get their 4xx.
Every ``--update-seconds`` the weights are updated (``POST /admin/update_weights_from_disk``),
cycling through three prepared checkpoint folders with increasing versions.

Every ``--sample-seconds`` (shorter for short runs: at least six samples) it records: requests
finished in the window (ok / expected 4xx / unexpected), p50/p95 latency of the ok ones, the
server's RSS (``VmRSS``), the store's size on disk (database + WAL + shm) and the served weight
version. At the end it prints the time series, the RSS growth from the first sample after
``--warmup-minutes`` (capped at a third of the run) to the last one (goal < 10%), and checks
against the store: main turns = ok main requests, side turns = ok side requests, next states
linked per session (role ``user`` for conversations, ``tool`` for tool sessions). Exit 1 on any
unexpected error or a store mismatch; the RSS goal is reported, not enforced.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _reliability import (finish, metrics, percentile, prepare_weights, rss_mb, store_bytes,  # noqa: E402
                          store_summary, update_weights)
from _soak_traffic import Traffic  # noqa: E402

from openclaw_rl.server.limits import DEFAULT_MAX_REQUEST_BYTES  # noqa: E402
from tests.support.server import running_server  # noqa: E402

API_KEY = "sk-bench"
MAX_CONTEXT = 32768  # the tiny model's window, passed explicitly so the over-long prompt is over it
MIX = ("stream", "plain", "tool", "stream", "side", "plain", "bad", "tool", "stream", "side")
MAIN_KINDS = ("stream", "plain", "tool")
KINDS = (*MAIN_KINDS, "side", "bad")


async def client_loop(traffic: Traffic, mix: tuple[str, ...], offset: int, deadline: float) -> None:
    """One client: the next session of the mix until the deadline (an open session is finished)."""
    i = offset
    while time.time() < deadline:
        await traffic.run(mix[i % len(mix)])
        i += 1


async def update_loop(traffic: Traffic, folders: list[Path], every: float, deadline: float, log: list) -> None:
    """Publish the next folder every ``every`` seconds (versions 1, 2, ...) until the deadline."""
    version = 0
    while time.time() + every < deadline:
        await asyncio.sleep(every)
        version += 1
        try:
            status, secs, text = await update_weights(traffic.http, traffic.base_url, API_KEY,
                                                      folders[(version - 1) % len(folders)], version)
        except Exception as exc:
            status, secs, text = -1, 0.0, f"{type(exc).__name__}: {exc}"
        log.append({"t": time.time(), "version": version, "status": status, "seconds": secs})
        if status != 200:
            traffic.tally.unexpected("weight_update", f"status {status}: {text[:200]}")


def take_sample(traffic: Traffic, pid: int, buffer: Path, t_start: float, since: float, now: float) -> dict:
    """One row of the time series: the window ``(since, now]`` and the state at ``now``."""
    window = [e for e in traffic.tally.events if since < e[0] <= now]
    lat = [e[2] for e in window if e[1] == "ok"]
    m = metrics(traffic.base_url)
    return {"t_s": now - t_start, "ok": len(lat), "expected": sum(e[1] == "expected" for e in window),
            "unexpected": sum(e[1] == "unexpected" for e in window),
            "p50_s": percentile(lat, 0.5), "p95_s": percentile(lat, 0.95), "rss_mb": rss_mb(pid),
            "store_mb": store_bytes(buffer) / 2**20, "weight_version": m["openclaw_weight_version"],
            "running": m["openclaw_requests_running"], "rejected_total": m["openclaw_requests_rejected_total"]}


async def sample_loop(traffic, pid, buffer, t_start, every, stop: asyncio.Event, rows: list) -> None:
    """Sample every ``every`` seconds until ``stop`` is set."""
    since = t_start
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), every)
        except asyncio.TimeoutError:
            pass
        if stop.is_set():
            return
        now = time.time()
        rows.append(await asyncio.to_thread(take_sample, traffic, pid, buffer, t_start, since, now))
        since = now


async def soak(args, handle, folders: list[Path], sample_s: float) -> dict:
    """Run the traffic, the updates and the sampler; returns the raw series and tallies."""
    traffic = Traffic(handle.base_url, API_KEY, args.max_tokens, over_long_chars=MAX_CONTEXT * 129 + 1,
                      too_large_bytes=DEFAULT_MAX_REQUEST_BYTES + 2**20)
    rows, updates, stop = [], [], asyncio.Event()
    t_start = time.time()
    deadline = t_start + 60 * args.minutes
    sampler = asyncio.create_task(sample_loop(traffic, handle.proc.pid, handle.buffer_dir, t_start, sample_s,
                                              stop, rows))
    await asyncio.gather(update_loop(traffic, folders, args.update_seconds, deadline, updates),
                         *(client_loop(traffic, args.mix, 3 * c, deadline) for c in range(args.clients)))
    stop.set()
    await sampler
    last = rows[-1]["t_s"] + t_start if rows else t_start
    rows.append(take_sample(traffic, handle.proc.pid, handle.buffer_dir, t_start, last, time.time()))
    await traffic.aclose()
    return {"rows": rows, "updates": updates, "tally": traffic.tally, "sessions_done": traffic.sessions_done}


def summarise(args, raw: dict, store: dict, warmup_s: float) -> dict:
    """Numbers and checks of the run."""
    rows, tally = raw["rows"], raw["tally"]
    events = tally.events
    unexpected = [e for e in events if e[1] == "unexpected"]
    base = next((r for r in rows if r["t_s"] >= warmup_s), rows[0])
    growth = 100 * (rows[-1]["rss_mb"] - base["rss_mb"]) / base["rss_mb"]
    ok_lat = [e[2] for e in events if e[1] == "ok"]
    done, by_kind = raw["sessions_done"], tally.ok_by_kind
    main_ok = sum(by_kind.get(k, 0) for k in MAIN_KINDS)
    want_user = done.get("stream", 0) + done.get("plain", 0)
    got_main, got_side = store["turns"].get("main", 0), store["turns"].get("side", 0)
    got_user, got_tool = store["next_states"].get("user", 0), store["next_states"].get("tool", 0)
    checks = {
        f"0 unexpected errors (got {len(unexpected)})": not unexpected,
        f"store main turns {got_main} == ok main requests {main_ok}": got_main == main_ok,
        f"store side turns {got_side} == ok side requests {by_kind.get('side', 0)}": got_side == by_kind.get("side", 0),
        f"user next states {got_user} == finished conversations {want_user}": got_user == want_user,
        f"tool next states {got_tool} == finished tool sessions {done.get('tool', 0)}": got_tool == done.get("tool", 0),
        "every request finished before the end (running 0)": rows[-1]["running"] == 0,
    }
    return {"model_path": args.model_path, "minutes": args.minutes, "clients": args.clients, "mix": args.mix,
            "max_tokens": args.max_tokens, "torch_threads": args.torch_threads,
            "requests": {"ok": len(ok_lat), "expected_4xx": sum(e[1] == "expected" for e in events),
                         "unexpected": len(unexpected)},
            "ok_by_kind": by_kind, "sessions_done": done, "unexpected": [e[3:] for e in unexpected[:20]],
            "latency_p50_s": percentile(ok_lat, 0.5), "latency_p95_s": percentile(ok_lat, 0.95),
            "rss_baseline": {"t_s": base["t_s"], "rss_mb": base["rss_mb"]}, "rss_end_mb": rows[-1]["rss_mb"],
            "rss_growth_pct": growth, "rss_goal_met": growth < 10, "store_end_mb": rows[-1]["store_mb"],
            "updates": raw["updates"], "store": store, "series": rows, "checks": checks,
            "passed": all(checks.values())}


def report(s: dict) -> None:
    """Print the time series and the summary."""
    print(f"\nsoak: {s['minutes']:g} min, {s['clients']} clients, max_tokens {s['max_tokens']}, {s['model_path']}, "
          f"server torch threads {s['torch_threads']}")
    print(f"  {'t_s':>7}{'ok':>6}{'4xx':>5}{'unexp':>6}{'p50_s':>8}{'p95_s':>8}{'rss_mb':>9}{'store_mb':>10}{'ver':>5}")
    for r in s["series"]:
        p50 = "-" if r["p50_s"] is None else f"{r['p50_s']:.2f}"
        p95 = "-" if r["p95_s"] is None else f"{r['p95_s']:.2f}"
        print(f"  {r['t_s']:>7.0f}{r['ok']:>6}{r['expected']:>5}{r['unexpected']:>6}{p50:>8}{p95:>8}"
              f"{r['rss_mb']:>9.1f}{r['store_mb']:>10.2f}{r['weight_version']:>5.0f}")
    rq = s["requests"]
    print(f"  requests: ok {rq['ok']} (by kind {s['ok_by_kind']}), expected 4xx {rq['expected_4xx']}, "
          f"unexpected {rq['unexpected']}; sessions finished {s['sessions_done']}")
    if s["latency_p50_s"] is not None:
        print(f"  latency over the run: p50 {s['latency_p50_s']:.2f} s, p95 {s['latency_p95_s']:.2f} s")
    print(f"  weight updates: {len(s['updates'])}, statuses {sorted({u['status'] for u in s['updates']})}")
    print(f"  RSS {s['rss_baseline']['rss_mb']:.1f} MiB at {s['rss_baseline']['t_s']:.0f} s (after warm-up) -> "
          f"{s['rss_end_mb']:.1f} MiB at the end: {s['rss_growth_pct']:+.1f}% "
          f"(goal < 10%: {'met' if s['rss_goal_met'] else 'NOT met'})")
    print(f"  store on disk at the end {s['store_end_mb']:.2f} MiB; turns {s['store']['turns']}, "
          f"next states {s['store']['next_states']}")
    for u in s["unexpected"]:
        print(f"  unexpected: {u}")


def main(argv: list[str] | None = None) -> int:
    """Parse flags, run the soak, print and check; returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--minutes", type=float, default=30.0, help="how long the traffic runs (default 30)")
    p.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    p.add_argument("--sample-seconds", type=float, default=30.0, help="sampling period (default 30)")
    p.add_argument("--update-seconds", type=float, default=60.0, help="weight update period (default 60)")
    p.add_argument("--warmup-minutes", type=float, default=2.0, help="RSS baseline after this (default 2)")
    p.add_argument("--max-tokens", type=int, default=16, help="max_tokens per request (default 16)")
    p.add_argument("--weights-dir", type=Path, default=None, help="update folders (default: temporary)")
    p.add_argument("--torch-threads", type=int, default=1, help="the server's --torch-threads (default 1)")
    p.add_argument("--mix", default=",".join(MIX), help="comma-separated session kinds each client cycles "
                   f"through, from {KINDS} (default: the full mix; one kind alone isolates its cost)")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = p.parse_args(argv)
    args.mix = tuple(k.strip() for k in args.mix.split(",") if k.strip())
    if not args.mix or set(args.mix) - set(KINDS):
        p.error(f"--mix takes kinds from {KINDS}")
    if args.minutes <= 0 or args.clients < 1 or args.sample_seconds <= 0 or args.update_seconds <= 0:
        p.error("--minutes, --clients, --sample-seconds and --update-seconds must be positive")
    total_s = 60 * args.minutes
    sample_s = min(args.sample_seconds, total_s / 6)
    warmup_s = min(60 * args.warmup_minutes, total_s / 3)
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        weights_dir = args.weights_dir or Path(tmp) / "weights"
        folders = prepare_weights(args.model_path, weights_dir, 3)
        buffer = Path(tmp) / "buffer"
        with running_server(args.model_path, buffer, "--weights-dir", str(weights_dir), "--max-context",
                            str(MAX_CONTEXT), "--torch-threads", str(args.torch_threads), api_key=API_KEY) as handle:
            raw = asyncio.run(soak(args, handle, folders, sample_s))
            store = store_summary(buffer)
    s = summarise(args, raw, store, warmup_s)
    report(s)
    return finish(s, args.json)


if __name__ == "__main__":
    sys.exit(main())
