"""The main job's "history first" variant (``make run ARGS="--history-first"``, or ``--history PATH``).

A person who installs OpenClaw-RL already has conversations with their agent. This variant
measures what training on them alone does, before the first live turn:

1. ``--history-first``: the simulated user's earlier sessions with the base model are made on a
   server of their own (capture on, recorded in ``<run>/history``): the same user, questions and
   reactions as the live job, ``--history-max-turns`` main turns. The held-out questions are
   measured there too (the base model). ``--history PATH`` takes the history from ``PATH``
   instead (an OpenClaw state folder, a trajectory bundle, a trajectory store or a session file,
   :mod:`openclaw_rl.rollout.history`); the base model is then measured on the run's server
   before training.
2. The run's server starts on a fresh store; the trainer loads the history (``--history-path``,
   ``--history-max-turns``, the most recent first), judges it with the method's judges and
   trains on it alone (``--history-only``: it stops when the history is used up). Nobody talks
   to the server meanwhile. Training on history sampled by the base model is on-policy only for
   the first step; later steps are corrected by truncated importance sampling against the
   recorded sampling log-probs (``--use-tis``).
3. Go-live: the held-out questions are measured again (same seeds), before any live training.
   The summary (``summary.json``) gives the base and go-live satisfaction, the paired difference
   with its 95% interval and an exact McNemar p-value, and how many history turns were judged and
   trained with their verdicts (:func:`openclaw_rl.rollout.history.history_counts`).

Live training after go-live is what the launch scripts do with ``HISTORY_PATH`` (history first,
then live turns in the same run); this variant stops at go-live.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from openclaw_rl.main_job.run import API_KEY, SERVER_THREADS, trainer_argv
from openclaw_rl.preferences import get_preference
from openclaw_rl.rollout.history import OVER_CAP, history_counts, history_line

__all__ = ["make_history", "run_history_first"]

#: seconds a server may take to start (two start here; on a busy 2-core machine a niced start took over 180 s)
SERVER_START_S = 960.0


def make_history(a: argparse.Namespace, out: Path, questions, pref, test_q, say) -> tuple[Path, dict, list]:
    """The simulated user's earlier sessions with the base model, recorded in ``out/history`` by a
    server of its own; the held-out questions are measured on the same server first.

    Returns:
        ``(history folder, base measurement, the user's truth records)``.
    """
    from openclaw_rl.main_job.heldout import measure
    from openclaw_rl.main_job.user import UserDriver
    from openclaw_rl.server.launcher import running_server

    folder = out / "history"
    with running_server(a.model_path, folder, "--served-model-name", "policy", "--backend", a.backend,
                        "--torch-threads", str(SERVER_THREADS), api_key=API_KEY, log_dir=folder,
                        timeout=SERVER_START_S) as server:
        base = server.base_url.rsplit("/v1", 1)[0]
        say(f"[main job] measuring {len(test_q)} held-out questions on the base model...")
        before = measure(base, API_KEY, test_q, pref, a.eval_max_tokens, concurrency=a.concurrency)
        sessions = -(-a.history_max_turns // 2)  # two main turns per session
        say(f"[main job] base: satisfaction {before['rate']:.3f} ({before['seconds']} s); the user's earlier "
            f"sessions with the base model: {sessions} sessions...")
        driver = UserDriver(base, API_KEY, questions, pref, a.max_tokens, concurrency=a.concurrency,
                            session_prefix="history-user-")
        driver.start()
        try:
            while driver.sessions < sessions:
                time.sleep(0.5)
        finally:  # Ctrl-C too: the user finishes the sessions in progress before the server stops
            driver.stop()
    if driver.failed:
        raise RuntimeError(f"{driver.failed} request(s) of the simulated user failed while making the history")
    met = [t.satisfied for t in driver.truth]
    say(f"[main job] history: {driver.sessions} sessions, {len(met)} main turns, the preference met in "
        f"{sum(met) / max(1, len(met)):.3f} of them ({folder})")
    return folder, before, driver.truth


def history_report_lines(result: dict) -> list[str]:
    """The variant's outcome in a few plain lines."""

    m = result["mcnemar"]
    return [f"held-out satisfaction: base {result['satisfaction_base']:.3f} -> go-live "
            f"{result['satisfaction_go_live']:.3f} (after {result['steps']} history steps, no live training; "
            f"McNemar {m['improved']}/{m['worsened']}, p = {m['p_value']:.2g})",
            history_line(result["history"])]


def run_history_first(a: argparse.Namespace) -> int:
    """Run the variant (module docstring; ``--history`` was checked with the flags); returns 0."""
    import ray

    from openclaw_rl.capture.store import TrajectoryStore
    from openclaw_rl.main_job.heldout import compare, measure
    from openclaw_rl.main_job.progress import StepProgress, console_to_log
    from openclaw_rl.main_job.questions import question_sets
    from openclaw_rl.main_job.report import joined_turns, judge_report
    from openclaw_rl.server.launcher import running_server
    from slime.config.run_args import parse_run_args
    from slime.train import train

    pref = get_preference(a.preference)
    out = Path(a.out) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    train_q, test_q = question_sets(a.held_out)
    t0 = time.time()
    console = console_to_log(out / "run.log")

    def say(line: str) -> None:
        console.write(line + "\n")
        print(line, flush=True)

    say(f"[main job] history first: {a.method} on {a.model_path}; the user asks: {pref.instruction!r}")
    say(f"[main job] full log: {out / 'run.log'}")
    truth, before = [], None
    history = Path(a.history) if a.history else None
    if history is None:
        history, before, truth = make_history(a, out, train_q, pref, test_q, say)
    with running_server(a.model_path, out / "rl_buffer", "--served-model-name", "policy", "--backend", a.backend,
                        "--torch-threads", str(SERVER_THREADS), "--metrics-dir", str(out / "logs"), api_key=API_KEY,
                        log_dir=out, timeout=SERVER_START_S) as server:
        base = server.base_url.rsplit("/v1", 1)[0]
        if before is None:
            say(f"[main job] measuring {len(test_q)} held-out questions on the base model...")
            before = measure(base, API_KEY, test_q, pref, a.eval_max_tokens, concurrency=a.concurrency)
            say(f"[main job] base: satisfaction {before['rate']:.3f} ({before['seconds']} s)")
        steps = -(-a.history_max_turns // a.batch_size)
        say(f"[main job] training on the history ({history}, at most {a.history_max_turns} turns, the most recent "
            f"first; at most {steps} steps), no live traffic...")
        argv = trainer_argv(a, base, out) + ["--num-rollout", str(steps), "--history-path", str(history),
                                             "--history-max-turns", str(a.history_max_turns), "--history-only"]
        cfg = parse_run_args(argv)
        progress = StepProgress(out / "logs", steps, console).start()
        try:
            summary = train(cfg)
        finally:
            progress.stop()
            ray.shutdown()
        go_live = measure(base, API_KEY, test_q, pref, a.eval_max_tokens, concurrency=a.concurrency)
        say(f"[main job] go-live: satisfaction {go_live['rate']:.3f}")
    store = TrajectoryStore(out / "rl_buffer")
    ids = [r[0] for r in store.read("SELECT id FROM turns WHERE history_rank IS NOT NULL ORDER BY history_rank")]
    over = store.read("SELECT COUNT(*) FROM judgements WHERE method=?", (OVER_CAP,))[0][0]
    counts = history_counts(store, ids, over)
    rows, unmatched = joined_turns(store, truth)
    judges = judge_report(rows, pref.hint_terms) if truth else None
    store.close()
    comparison = compare(before, go_live)
    gate = summary.get("promotion_gate") or {}
    result = {"variant": "history-first", "method": a.method, "preference": pref.name, "model": a.model_path,
              "history_path": str(history), "history_made": bool(truth),
              "history_turns_met": (sum(t.satisfied for t in truth) / len(truth)) if truth else None,
              "history": counts, "steps": summary["steps"], "samples_trained": summary["samples_trained"],
              "versions_published": summary["versions_published"],
              "satisfaction_base": before["rate"], "satisfaction_go_live": go_live["rate"],
              "satisfaction_base_ci95": before["ci95"], "satisfaction_go_live_ci95": go_live["ci95"],
              "satisfaction_delta": comparison["delta"], "satisfaction_delta_ci95": comparison["delta_ci95"],
              "mcnemar": comparison["mcnemar"], "held_out_questions": len(test_q),
              "judge": judges, "unmatched_turns": unmatched if truth else None,
              "gate_versions": gate.get("versions", []), "paused": summary.get("paused"),
              "buffer": str(out / "rl_buffer"), "wall_s": round(time.time() - t0, 1)}
    (out / "heldout.json").write_text(json.dumps({"base": before, "go_live": go_live}, indent=1))
    (out / "summary.json").write_text(json.dumps(result, indent=2))
    print("\n== main job summary (history first) ==\n" + json.dumps(result, indent=2), flush=True)
    say("\n" + "\n".join(history_report_lines(result)))
    say(f"[main job] summary: {out / 'summary.json'}; full log: {out / 'run.log'}")
    return 0
