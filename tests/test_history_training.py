"""Training from history (``--history-path`` / ``HISTORY_PATH``, the main job's ``--history``):
the history is brought into the run's store, capped to the most recent turns, judged and trained
before live turns (most recent first), never dropped as stale, counted for the summary; a bad
path is one line. The end-to-end run on Ray is at the bottom (``ray``, ``slow``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openclaw_rl.capture.records import SKIPPED, TurnRecord, TurnType
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.main_job.run import DEFAULT_STEPS, parse_main_args
from openclaw_rl.rollout.data_source import StoreDataSource
from openclaw_rl.rollout.history import (OVER_CAP, HistoryPathError, history_counts, history_kind, history_line,
                                         load_history)
from openclaw_rl.tls import tls_context
from tests.support.openclaw_history import build_agent_store
from tests.support.ray_head import driver_env

REPO = Path(__file__).resolve().parent.parent


def _turn(sid: str, k: int, version: int = 0) -> TurnRecord:
    return TurnRecord(session_id=sid, turn_type=TurnType.MAIN, messages=[{"role": "user", "content": f"{sid} q{k}"}],
                      prompt_text=f"{sid} q{k}", prompt_ids=[1, 2, 3], response_ids=[4, 5],
                      response_logprobs=[-0.5, -0.25], response_text=f"{sid} a{k}", finish_reason="stop",
                      weight_version=version)


def _recorded_history(folder: Path, sessions: int = 4, turns: int = 2) -> TrajectoryStore:
    """A store of earlier sessions as a server records them (ids, logprobs), session ``h<i>`` at
    time ``1000 * (i + 1)`` (``h<sessions-1>`` the most recent), each main turn with a next state."""
    store = TrajectoryStore(folder)
    for i in range(sessions):
        sid = f"h{i}"
        store.touch_session(sid, "header")
        for k in range(turns):
            rec = store.add_turn(_turn(sid, k))
            store.set_next_state(rec.id, "thanks" if k % 2 == 0 else "No, that's wrong.", "user")
        store.close_session(sid)
        with store.transaction() as db:
            db.execute("UPDATE turns SET created_at = ? + turn_index WHERE session_id=?", (1000.0 * (i + 1), sid))
    return store


def _judge_all(store: TrajectoryStore, reward: float = 1.0) -> None:
    """A stand-in judge: every ready turn gets ``verdict`` +1 (-1 when its next state corrects)."""
    while turns := store.claim_for_judging(100):
        for t in turns:
            v = -1 if (t.next_state or "").startswith("No") else 1
            store.save_judgement(t.id, "prm", v * reward, True, {"verdict": v})


def test_history_kinds_and_bad_paths(tmp_path):
    build_agent_store(tmp_path / "state" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "manifest.json").write_text("{}")
    _recorded_history(tmp_path / "buffer").close()
    (tmp_path / "s.jsonl").write_text("")
    assert [history_kind(tmp_path / p) for p in ("state", "bundle", "buffer", "buffer/trajectories.sqlite",
                                                   "s.jsonl")] == ["openclaw-state", "bundle", "store", "store",
                                                                   "sessions"]
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "chat.jsonl").write_text(json.dumps({"type": "session", "version": 4, "id": "s1"}) + "\n")
    for bad, why in (("missing", "no such file or folder"), ("empty", "not an OpenClaw state folder"),
                     ("notes.txt", "not a session file"), ("chat.jsonl", "an OpenClaw session transcript; give the state")):
        with pytest.raises(HistoryPathError, match=why):
            history_kind(tmp_path / bad)
    # the launch scripts' check: one line, exit 2
    r = subprocess.run([sys.executable, "-m", "openclaw_rl.rollout.history", str(tmp_path / "empty")], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not an OpenClaw state folder" in r.stderr
    # the trainer's own check, before anything starts
    r = subprocess.run([sys.executable, str(REPO / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
                        "--num-rollout", "1", "--history-path", str(tmp_path / "missing")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.strip().splitlines()[-1] == (f"slime/train.py: error: --history-path {tmp_path / 'missing'}: "
                                                 "no such file or folder")


def test_launch_script_bad_history_path_is_one_line(tmp_path):
    env = {**os.environ, "TRAIN_JOB_DRY_RUN": "1", "HISTORY_PATH": str(tmp_path / "nope"), "HISTORY_MAX_TURNS": "7"}
    r = subprocess.run(["bash", str(REPO / "openclaw-rl" / "run_qwen3_7b_openclaw_rl.sh")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == f"run_qwen3_7b_openclaw_rl.sh: HISTORY_PATH {tmp_path / 'nope'}: no such file or folder"
    _recorded_history(tmp_path / "hist").close()
    env["HISTORY_PATH"] = "hist"  # relative to where the script runs
    r = subprocess.run(["bash", str(REPO / "openclaw-rl" / "run_qwen3_7b_openclaw_rl.sh")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    argv = json.loads(next(line for line in r.stdout.splitlines() if line.startswith("TRAIN_JOB_ARGV="))[15:])
    assert argv[argv.index("--history-path") + 1] == str(tmp_path / "hist")
    assert f"HISTORY_PATH={tmp_path / 'hist'} (at most 7 turns" in r.stdout
    assert "HISTORY_MAX_TURNS" in r.stdout  # carried into the job's environment (the flag's fallback)


def test_main_job_history_flags(tmp_path, capsys):
    a = parse_main_args(["--history-first"])
    assert a.history_variant and a.steps == 0 and a.history_max_turns == 96
    assert parse_main_args([]).steps == DEFAULT_STEPS
    for argv, why in ((["--history", str(tmp_path / "nope")], "--history .*: no such file or folder"),
                      (["--history-first", "--steps", "3"], "stop at go-live"),
                      (["--history-first", "--history", str(tmp_path)], "not both")):
        with pytest.raises(SystemExit) as exc:
            parse_main_args(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert __import__("re").search(why, err), err


def test_history_is_capped_most_recent_first_and_trained_before_live_turns(tmp_path):
    _recorded_history(tmp_path / "history").close()  # 8 main turns, h3's the most recent
    run = TrajectoryStore(tmp_path / "run")
    run.touch_session("live", "header")
    live = run.add_turn(_turn("live", 0, version=0))  # a live turn recorded before the history was loaded
    run.set_next_state(live.id, "thanks", "user")
    load = load_history(run, tmp_path / "history", max_turns=5)
    assert (load.kind, load.sessions_added, load.over_cap) == ("store", 4, 3)
    ranked = [run.get_turn(i) for i in load.turn_ids]
    assert [(t.session_id, t.turn_index) for t in ranked] == [("h3", 1), ("h3", 0), ("h2", 1), ("h2", 0), ("h1", 1)]
    assert [t.history_rank for t in ranked] == [1, 2, 3, 4, 5]
    # copied as recorded: ids, logprobs, times
    assert ranked[0].prompt_ids == [1, 2, 3] and ranked[0].response_logprobs == [-0.5, -0.25]
    assert ranked[0].created_at == 4001.0 and not ranked[0].ids_from_text
    over = [t for t in run.turns(status=SKIPPED)]
    assert sorted((t.session_id, t.turn_index) for t in over) == [("h0", 0), ("h0", 1), ("h1", 0)]
    assert all(run.judgement(t.id)["method"] == OVER_CAP for t in over)

    another = run.add_turn(_turn("live", 1, version=0))  # live traffic arriving while the history is judged
    run.set_next_state(another.id, "thanks", "user")
    _judge_all(run)
    # the trainer is at version 5: live turns of version 0 are stale (dropped), history turns never are
    src = StoreDataSource(run, max_staleness=2)
    src.current_version = 5
    batch = src.take(5)
    assert [s.source_id for s in batch] == load.turn_ids  # history first, the most recent first
    assert all(s.metadata["history"] and s.metadata["staleness"] == 5 for s in batch)
    src.mark_trained(batch, step=1)
    counts = history_counts(run, load.turn_ids, load.over_cap)
    assert counts == {"queued": 5, "over_cap": 3, "judged": 5, "trained": 5, "held_out": 0, "skipped": 0,
                      "waiting": 0, "verdicts": {"+1": 2, "-1": 3, "0": 0}}
    assert "5 turn(s) queued (3 older left out by the cap), 5 judged (verdicts +1: 2, -1: 3, 0: 0), 5 trained" \
        in history_line(counts)
    # then the live turns, oldest first (both stale at version 5 here, so dropped and counted)
    with pytest.raises(Exception):
        src.take(1, timeout_s=1)
    assert src.stats["dropped_stale"] == 2

    # loading again adds nothing and queues the ones the cap left out (a later run, a larger cap)
    again = load_history(run, tmp_path / "history", max_turns=10)
    assert (again.sessions_added, again.turns_added, again.over_cap) == (0, 0, 0)
    assert [(run.get_turn(i).session_id, run.get_turn(i).turn_index) for i in again.turn_ids] == [
        ("h1", 0), ("h0", 1), ("h0", 0)]
    assert all(run.judgement(i) is None for i in again.turn_ids)
    run.close()


def test_history_only_data_source_ends_with_the_history(tmp_path):
    _recorded_history(tmp_path / "history", sessions=2).close()
    run = TrajectoryStore(tmp_path / "run")
    load = load_history(run, tmp_path / "history", max_turns=3)
    run.touch_session("live", "header")
    live = run.add_turn(_turn("live", 0))
    run.set_next_state(live.id, "thanks", "user")
    _judge_all(run)
    src = StoreDataSource(run, finite=True, history_only=True)
    first = src.take(2)
    second = src.take(2)  # one left: a short batch, then nothing; the live turn is never taken
    assert [s.source_id for s in first + second] == load.turn_ids and len(second) == 1
    src.mark_trained(first + second, 1)
    assert src.take(2) == [] and run.get_turn(live.id).status == "judged"
    run.close()


def test_openclaw_state_folder_history_and_the_run_s_own_buffer(tmp_path):
    state = tmp_path / "state"
    build_agent_store(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    run = TrajectoryStore(tmp_path / "run")
    load = load_history(run, state, max_turns=100)
    mains = [t for t in run.turns() if t.turn_type == TurnType.MAIN]
    assert load.kind == "openclaw-state" and load.sessions_added == 2 and len(load.turn_ids) == len(mains) >= 3
    times = [run.get_turn(i).created_at for i in load.turn_ids]
    assert times == sorted(times, reverse=True)
    # idempotent: a second load imports nothing and queues the same turns (none judged yet)
    again = load_history(run, state, max_turns=100)
    assert again.sessions_added == 0 and sorted(again.turn_ids) == sorted(load.turn_ids)
    run.close()
    # what import-openclaw --out wrote, given as the run's own buffer: its imported sessions are the history
    own = TrajectoryStore(tmp_path / "run")
    with own.transaction() as db:
        db.execute("UPDATE turns SET history_rank = NULL")
    mine = load_history(own, tmp_path / "run", max_turns=2)
    assert mine.kind == "store" and mine.sessions_added == 0 and len(mine.turn_ids) == 2 and mine.over_cap >= 1
    own.close()


@pytest.mark.ray
@pytest.mark.slow
def test_history_is_judged_and_trained_on_ray_before_live_turns(ray_head, tmp_path):
    """slime/train.py --history-path on a real server, store and Ray, with live traffic from the
    start: the lexical PRM judges the history's 4 most recent turns (of 8) from their next states,
    steps 1-2 train them most recent first, steps 3-4 the live turns, and the summary counts the
    history with its verdicts."""
    import httpx

    _recorded_history(tmp_path / "history").close()
    env = driver_env(ray_head[0], "SLIME_CALLER_CWD", "DATA_PATH")
    job = subprocess.Popen([sys.executable, str(REPO / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
                            "--history-path", "history", "--history-max-turns", "4", "--num-rollout", "4",
                            "--advantage-estimator", "broadcast", "--prm-mode", "lexical", "--num-judge-workers", "1",
                            "--rollout-batch-size", "2", "--rollout-max-response-len", "8", "--use-tis", "--save",
                            "ckpt", "--log-dir", "logs", "--rl-buffer-dir", "buffer", "--port", "30123",
                            "--api-key", "k"],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = "http://127.0.0.1:30123"
        for _ in range(900):  # the job's server serves while the history is judged and trained
            try:
                if httpx.get(f"{url}/healthz", timeout=2, verify=tls_context()).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert job.poll() is None, job.communicate()[1][-3000:]
            __import__("time").sleep(1)
        for i in range(2):  # two live sessions of two turns, each reply thanked
            messages = [{"role": "user", "content": f"live question {i}"}]
            for k in range(3):
                last = k == 2
                r = httpx.post(f"{url}/v1/chat/completions", timeout=600, headers={
                    "Authorization": "Bearer k", "X-Session-Id": f"live-{i}",
                    **({"X-Turn-Type": "side", "X-Session-Done": "true"} if last else {})},
                    json={"model": "policy", "messages": messages, "max_tokens": 1 if last else 8})
                assert r.status_code == 200, r.text
                messages += [{"role": "assistant", "content": r.json()["choices"][0]["message"]["content"] or ""},
                             {"role": "user", "content": "thanks"}]
        out, err = job.communicate(timeout=900)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 0, out[-3000:] + err[-5000:]
    summary = json.loads(out[out.index("{"):])
    assert summary["steps"] == 4 and summary["samples_trained"] == 8
    m = summary["final_metrics"]
    assert {k: m[f"history/{k}"] for k in ("queued", "over_cap", "judged", "trained", "skipped", "waiting")} == {
        "queued": 4, "over_cap": 4, "judged": 4, "trained": 4, "skipped": 0, "waiting": 0}
    assert (m["history/verdict_+1"], m["history/verdict_-1"], m["history/verdict_0"]) == (2, 2, 0)
    assert "history: 4 turn(s) queued (4 older left out by the cap), 4 judged (verdicts +1: 2, -1: 2, 0: 0), " \
           "4 trained" in err
    store = TrajectoryStore(tmp_path / "buffer")
    rows = store.read("SELECT session_id, history_rank, trained_step FROM turns WHERE status='trained'")
    store.close()
    # the history first, the most recent first (h3's two turns, then h2's), then the live turns
    assert sorted((rank, sid, step) for sid, rank, step in rows if rank is not None) == [
        (1, "h3", 1), (2, "h3", 1), (3, "h2", 2), (4, "h2", 2)]
    assert sorted((step, sid) for sid, rank, step in rows if rank is None) == [
        (3, "live-0"), (3, "live-0"), (4, "live-1"), (4, "live-1")]


@pytest.mark.ray
@pytest.mark.slow
def test_main_job_history_first_measures_base_and_go_live(ray_head, tmp_path):
    """``python -m openclaw_rl.main_job --history-first`` (short, tiny model): the simulated user's
    earlier sessions are recorded on a server of their own, the 4 most recent main turns are judged
    and trained with nobody talking to the run's server, and the summary has the base and go-live
    satisfaction with McNemar's p and the history counts."""
    env = driver_env(ray_head[0], "SLIME_CALLER_CWD", "HISTORY_PATH")  # its trainer on the shared head
    r = subprocess.run([sys.executable, "-m", "openclaw_rl.main_job", "--history-first", "--method", "rl",
                        "--model-path", "builtin:tiny-qwen3", "--history-max-turns", "4", "--batch-size", "2",
                        "--held-out", "4", "--max-tokens", "8", "--eval-max-tokens", "8", "--prm-mode", "lexical",
                        "--promotion-gate", "off", "--gate-holdout-every", "0", "--out", str(tmp_path / "out")],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = (tmp_path / "out").iterdir()
    s = json.loads((run / "summary.json").read_text())
    assert s["variant"] == "history-first" and s["history_made"] and s["history_path"] == str(run / "history")
    h = s["history"]
    made = TrajectoryStore(run / "history")
    made_main = len([t for t in made.turns() if t.turn_type == TurnType.MAIN])
    made.close()
    assert made_main >= 4 and h["queued"] == 4 and h["over_cap"] == made_main - 4
    assert h["judged"] == 4 and h["trained"] + h["skipped"] == 4 and sum(h["verdicts"].values()) == 4
    assert s["steps"] == -(-h["trained"] // 2) and s["samples_trained"] == h["trained"]
    assert 0 <= s["satisfaction_base"] <= 1 and 0 <= s["satisfaction_go_live"] <= 1
    assert s["mcnemar"]["n"] == 4 and 0 < s["mcnemar"]["p_value"] <= 1
    assert s["judge"]["prm"]["n"] >= 4  # the judges' agreement with the user's truth on the history
    assert "held-out satisfaction: base " in r.stdout and "-> go-live " in r.stdout and "McNemar" in r.stdout
    assert "history: 4 turn(s) queued" in r.stdout
