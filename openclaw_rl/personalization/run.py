"""One benchmark run: one method, one seed, one set of personas (joint when several), on a fresh
server, through the main job's machinery (:mod:`openclaw_rl.main_job`).

1. Serve the policy (capture on; ``memory``: with ``--inject-lessons``) and measure each persona's
   held-out questions (never trained on; :func:`openclaw_rl.main_job.heldout.measure`).
2. Start one simulated user per persona (:class:`openclaw_rl.main_job.user.UserDriver`, the main
   job's user with the persona's preference and questions, shuffled by the seed), each for
   ``sessions`` sessions, paced by :class:`openclaw_rl.personalization.pacing.Pacer`.
3. Per method (:data:`METHODS`): ``combine`` / ``rl`` / ``opd`` train live on Ray with the main job's
   trainer flags (:func:`openclaw_rl.main_job.run.trainer_argv`) until the sessions end (the trainer
   then stops at its ``--rollout-timeout-s``; a wait that long while the users still talk ends
   training early, ``training_ended_by: "stalled"``); ``none`` does not train; ``memory`` does not train
   either: OPD's hint judge runs on the turns (:class:`openclaw_rl.rollout.judge_loop.JudgeLoop`),
   each accepted hint is filed as a lesson, and the server adds the top lessons to the system prompt
   of later sessions (``--inject-lessons``, :mod:`openclaw_rl.capture.lessons`).
4. Measure the held-out questions again and score each session's first reply with its persona's
   rule (:meth:`BenchPersona.passes`, what the user decided when it answered), giving sessions to
   stable (:func:`openclaw_rl.personalization.stability.sessions_to_stable`).

Writes ``sessions.jsonl`` (one row per counted session) and ``run.json`` into the run folder.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import shlex
import threading
import time
from collections import Counter
from pathlib import Path

import ray

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.main_job.heldout import compare, measure
from openclaw_rl.main_job.questions import Question, question_sets
from openclaw_rl.main_job.run import API_KEY, METHOD_ARGS, SERVER_THREADS, parse_main_args, trainer_argv
from openclaw_rl.main_job.user import UserDriver
from openclaw_rl.models import load_tokenizer
from openclaw_rl.personalization.pacing import Pacer
from openclaw_rl.personalization.personas import BenchPersona, ReplyBudget, get_persona
from openclaw_rl.personalization.stability import STREAK, sessions_to_stable
from openclaw_rl.rollout.data_source import RolloutTimeout
from openclaw_rl.rollout.judge_loop import JudgeLoop
from openclaw_rl.rollout.service import build_turn_judge
from openclaw_rl.server.launcher import running_server
from slime.errors import one_line
from slime.methods.registry import load_method_class
from slime.omp import usable_cores
from slime.config.run_args import parse_run_args
from slime.train import train

__all__ = ["BASELINES", "METHODS", "TRAINED", "run_one"]

#: methods that train (the main job's ``--method``)
TRAINED = tuple(sorted(METHOD_ARGS))
#: methods that do not: the untrained floor and the memory baseline
BASELINES = ("none", "memory")
METHODS = (*TRAINED, *BASELINES)
#: the judge whose accepted hints the memory baseline keeps (the hint judge OPD and Combine use); the
#: baselines parse the main job's flags with this method (``none`` reads only the serving flags)
MEMORY_JUDGE_METHOD = "opd"


def _metrics_rows(logs: Path) -> list[dict]:
    return [json.loads(line) for p in sorted(logs.rglob("metrics.jsonl")) for line in p.read_text().splitlines()
            if line.strip()]


def job_args(a: argparse.Namespace, method: str, seed: int) -> argparse.Namespace:
    """The main job's flags for this run (:func:`openclaw_rl.main_job.run.parse_main_args`): the
    bench's ``--model-path``, ``--batch-size``, ``--max-tokens``, ``--job-args``, the trainer's
    ``--seed`` and ``--rollout-timeout-s``, and ``--steps`` one more than the counted turns can
    fill (the sessions end training, not the steps), and ``--train-threads`` every usable core: the users
    wait for each step (:class:`Pacer`), so the server is idle while the trainer trains (the main job
    leaves the server a core; here that made a step of SmolLM2-135M 28 s instead of 20 s). A
    ``--trainer-args`` flag given by the user comes last and wins. ``memory`` builds OPD's judge
    from them; the main job has no ``--method none``, so both baselines parse with
    :data:`MEMORY_JUDGE_METHOD`."""
    steps = -(-len(a.personas) * a.sessions * a.turns // a.batch_size) + 1
    trainer = (f"--seed {seed} --rollout-timeout-s {a.train_wait_s} --train-threads {usable_cores()} "
               f"{a.trainer_args}").strip()
    return parse_main_args(["--model-path", a.model_path, "--method", MEMORY_JUDGE_METHOD if method in BASELINES
                            else method, "--batch-size", str(a.batch_size), "--max-tokens", str(a.max_tokens),
                            "--steps", str(steps), *shlex.split(a.job_args), "--trainer-args", trainer])


def _held_out(personas: list[BenchPersona], k: int) -> dict[str, list[Question]]:
    if k <= 0:
        return {}
    _, pool = question_sets(65)
    return {p.name: p.questions(pool)[:k] for p in personas}


def _measure_all(base: str, personas: list[BenchPersona], held: dict[str, list[Question]], max_tokens: int) -> dict:
    return {p.name: measure(base, API_KEY, held[p.name], p.preference, max_tokens) for p in personas if p.name in held}


def _session_rows(driver: UserDriver, persona: BenchPersona, sessions: int) -> list[dict]:
    """One row per counted session: its question, first reply, whether it passed, whether the reply
    ended on the token budget (``cut``) and why it missed (``miss``:
    :meth:`BenchPersona.miss_reason`, ``"failed"`` for a session whose request failed: no reply,
    counted as a miss; None when it passed)."""
    first = {t.session_id: t for t in driver.truth if t.index == 0}
    rows = []
    for i in range(sessions):
        t = first.get(f"{persona.name}-{i}")
        q = driver.questions[i % len(driver.questions)]
        passed = bool(t and t.satisfied)
        miss = None if passed else "failed" if t is None else persona.miss_reason(t.reply, q.text, cut=t.cut)
        rows.append({"persona": persona.name, "session": i + 1, "question_id": q.id, "question": q.text,
                     "passed": passed, "failed": t is None, "reply": t.reply if t else None,
                     "reaction": t.reaction if t else None, "cut": bool(t and t.cut), "miss": miss})
    return rows


def _persona_result(persona: BenchPersona, rows: list[dict], before: dict | None, after: dict | None) -> dict:
    """A persona's part of ``run.json`` from its session rows and held-out measurements (or None)."""
    curve = [int(r["passed"]) for r in rows]
    stable = sessions_to_stable([bool(c) for c in curve], STREAK)
    return {"rule": persona.rule, "instruction": persona.preference.instruction,
            "stable": {**dataclasses.asdict(stable), "text": stable.text()}, "curve": curve,
            "pass_rate": sum(curve) / len(curve),
            "misses": dict(Counter(r["miss"] for r in rows if not r["passed"]).most_common()),
            "heldout": ({"before": before["rate"], "after": after["rate"], **compare(before, after)}
                        if before and after else None)}


def _end_traffic_when_users_are_done(drivers: list[UserDriver], buffer: Path, stop: threading.Event) -> None:
    """Once no driver runs any more, record in the store at ``buffer`` that the live traffic ended
    (:meth:`TrajectoryStore.end_live_traffic`), so that the trainer stops as soon as the recorded
    turns are used up; returns early when ``stop`` is set."""
    while any(d.running() for d in drivers):
        if stop.wait(0.5):
            return
    store = TrajectoryStore(buffer)
    try:
        store.end_live_traffic()
    finally:
        store.close()


def _train_until_sessions_end(cfg, drivers: list[UserDriver], buffer: Path, say=print) -> dict:
    """Train on Ray until the users are done: once they are (a thread watches the drivers), the
    store says so, and the trainer's wait for turns that no longer come ends as soon as the
    recorded ones are used up (:class:`openclaw_rl.rollout.data_source.TrafficEnded`), not after
    ``--train-wait-s``.

    Returns:
        The trainer's summary with ``ended_by``: ``"steps"`` (all steps ran), ``"sessions"`` (the
        users were done), or ``"stalled"``: no full batch of trainable turns came within the wait
        while the users still talked (few corrected turns for OPD, say); the remaining sessions run
        on the last published weights, and the report says so.

    Raises:
        Exception: whatever else training raised.
    """
    stop = threading.Event()
    watcher = threading.Thread(target=_end_traffic_when_users_are_done, args=(drivers, buffer, stop), daemon=True,
                               name="bench-traffic-end")
    watcher.start()
    try:
        return {**train(cfg), "ended_by": "steps"}
    except Exception as exc:  # a Ray task error wrapping the data source's RolloutTimeout / TrafficEnded
        if not (isinstance(exc, RolloutTimeout) or "RolloutTimeout" in repr(exc) or "TrafficEnded" in repr(exc)):
            raise
        if not any(d.running() for d in drivers):
            return {"ended_by": "sessions"}
        say(f"[bench] training stalled (no full batch within --train-wait-s): {one_line(exc, 200)}; "
            "the remaining sessions run untrained")
        return {"ended_by": "stalled"}
    finally:
        stop.set()
        watcher.join(10)
        ray.shutdown()


def run_one(a: argparse.Namespace, method: str, seed: int, out: Path, say=print) -> dict:
    """One run (module docstring) into ``out``.

    Args:
        a: the bench's flags (:func:`openclaw_rl.personalization.cli.parse_bench_args`).
        method: one of :data:`METHODS`. seed: the question order's and the trainer's seed.
        out: the run folder (made). say: where progress lines go.

    Returns:
        The run's ``run.json`` content: ``method``, ``seed``, ``personas`` (per persona: ``rule``,
        ``stable`` (:class:`Stability` fields and ``text``), ``curve`` (0/1 per session),
        ``pass_rate``, ``misses`` (why first replies missed: reason -> sessions, most first),
        ``heldout`` before/after with the paired comparison), ``steps``, ``versions_published``,
        ``lessons``, ``pacing``, ``failed_requests``, ``wall_s``.

    Raises:
        ValueError: unknown method or persona. RuntimeError: the server did not start.
        Exception: training failed while users were talking.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    tok = load_tokenizer(a.model_path)
    budget = ReplyBudget(a.max_tokens, lambda text: len(tok.encode(text, add_special_tokens=False)))
    personas = [get_persona(n, budget) for n in a.personas]
    train_q, _ = question_sets(1)
    held = _held_out(personas, a.held_out)
    ns = job_args(a, method, seed)
    lessons = ("--inject-lessons", str(a.lessons)) if method == "memory" else ()
    threads = SERVER_THREADS if method in TRAINED else a.torch_threads
    with running_server(a.model_path, out / "rl_buffer", "--served-model-name", "policy", "--backend", ns.backend,
                        "--torch-threads", str(threads), "--metrics-dir", str(out / "logs"), *lessons,
                        api_key=API_KEY, log_dir=out,
                        timeout=a.server_timeout_s or (180.0 if ns.backend == "transformers" else 960.0)) as server:
        base = server.base_url.rsplit("/v1", 1)[0]
        before = _measure_all(base, personas, held, a.max_tokens)
        mode = "train" if method in TRAINED else "judge" if method == "memory" else "none"
        pacer = Pacer(out / "rl_buffer", mode, a.batch_size, a.sessions, timeout_s=a.pace_timeout_s)
        drivers = []
        for p in personas:
            qs = p.questions(train_q)
            random.Random(f"{seed}:{p.name}").shuffle(qs)
            drivers.append(UserDriver(base, API_KEY, qs, p.preference, a.max_tokens, turns=a.turns, concurrency=1,
                                      session_prefix=f"{p.name}-", limit=a.sessions, before_session=pacer))
        say(f"[bench] {method} seed {seed}: {len(personas)} persona(s) x {a.sessions} sessions at {base}")
        summary: dict = {}
        loop = None
        if method == "memory":
            cfg = parse_run_args(trainer_argv(ns, base, out))
            judge = build_turn_judge(cfg, load_method_class(cfg.advantage_estimator)(cfg))
            judged = TrajectoryStore(out / "rl_buffer")
            loop = JudgeLoop(judged, judge, num_workers=1).start()
        for d in drivers:
            d.start()
        if method in TRAINED:
            summary = _train_until_sessions_end(parse_run_args(trainer_argv(ns, base, out)), drivers,
                                                out / "rl_buffer", say)
        for d in drivers:
            d.join()
        if loop is not None:
            loop.stop()
            judged.close()
        after = _measure_all(base, personas, held, a.max_tokens)
    store = TrajectoryStore(out / "rl_buffer")
    (n_lessons,) = store.read("SELECT COUNT(*) FROM lessons WHERE deleted = 0")[0]
    store.close()
    rows = [r for d, p in zip(drivers, personas) for r in _session_rows(d, p, a.sessions)]
    with open(out / "sessions.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    metrics = _metrics_rows(out / "logs")
    per = {p.name: _persona_result(p, [r for r in rows if r["persona"] == p.name], before.get(p.name),
                                   after.get(p.name)) for p in personas}
    result = {"method": method, "seed": seed, "model": a.model_path, "sessions": a.sessions, "streak": STREAK,
              "max_tokens": a.max_tokens, "personas": per,
              "steps": len([m for m in metrics if "step" in m]),
              "versions_published": int(sum(m.get("publish/ok", 0) for m in metrics)),
              "training_ended_by": summary.get("ended_by"), "lessons": n_lessons,
              "pacing": {"mode": pacer.mode, "timeouts": pacer.timeouts, "waited_s": round(pacer.waited_s, 1)},
              "failed_requests": sum(d.failed for d in drivers), "wall_s": round(time.time() - t0, 1)}
    (out / "run.json").write_text(json.dumps(result, indent=1))
    heldout_text = "".join(f"; {n} held-out {r['heldout']['before']:.2f} -> {r['heldout']['after']:.2f}"
                           for n, r in per.items() if r["heldout"])
    say(f"[bench] {method} seed {seed}: " + ", ".join(f"{n} {r['stable']['text']}" for n, r in per.items())
        + f" ({result['steps']} steps, training ended by {summary.get('ended_by') or '-'}, {n_lessons} lessons, "
          f"{result['wall_s']} s){heldout_text}")
    return result
