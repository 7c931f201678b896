"""Forgetting on a real server: ``openclaw-rl forget --session ID --rollback`` while a request of
that session is still streaming; the unique text of the conversation is then in no file of the
buffer folder (database, write-ahead log, an export) nor of the run's log folder (the server's own
log, which names the session's turns in its access lines, and a ``run.log`` a trainer keeps
appending to), the other conversation is intact, the versions trained on it are reported and
serving goes back to the one before; bad input is a 4xx / one-line error; ``--before`` and
``--all`` on a store no server uses."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.models import load_tokenizer
from openclaw_rl.rollout.data_source import StoreDataSource
from tests.support.control import AUTH, client, converse, files_containing, judge_all, perturbed_copy
from tests.support.server import running_server

SECRET = "zebra-quartz-7781 is my bank PIN"
OTHER = "marmalade-osprey-4410 note"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "openclaw_rl.cli", *args], capture_output=True, text=True, timeout=300)


def _trainer_log(path):
    """A ``run.log`` as the main job keeps it: appended to through a descriptor that stays open
    (:func:`openclaw_rl.main_job.progress.console_to_log`), with the trainer's lines on two sessions."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"INFO step 1 reward/mean=0.5\n"
                 b"(TrainActor pid=1) WARNING:slime.guards.admission:s-secret:0: degenerate reply (over_application: "
                 + SECRET.encode() + b")\n"
                 b"(TrainActor pid=1) INFO:slime.guards.admission:s-other:0: rejected reply repeats 'note'\n")
    return fd


def test_forget_a_session_mid_stream_with_rollback(tmp_path):
    buf, run = tmp_path / "rl_buffer", tmp_path / "run"
    v1 = perturbed_copy(tmp_path / "v1", seed=1)
    run.mkdir()
    run_log = _trainer_log(run / "run.log")
    # the server logs at its default level (info: access lines) into the run's folder, which it scrubs
    with running_server("builtin:tiny-qwen3", buf, "--log-level", "info", "--run-log-dir", str(run),
                        log_dir=run) as server:
        root = server.base_url.rsplit("/v1", 1)[0]
        ids = converse(server, "s-secret", [f"Remember: {SECRET}.", "Perfect, thank you, exactly right!",
                                            f"No, that's wrong. You should never repeat {SECRET} back.", "ok"])
        converse(server, "s-other", [f"Keep this: {OTHER}.", "Perfect, thank you, exactly right!", "ok"])
        assert judge_all(buf) == 5
        # a rating with a correction, and a lesson from the session's hint
        assert httpx.post(root + "/v1/feedback", headers=AUTH, timeout=60,
                          json={"id": ids[1], "rating": -1, "correction": f"Do not echo {SECRET}."}).status_code == 200
        lessons = httpx.get(root + "/admin/lessons", headers=AUTH).json()["data"]
        assert any(SECRET in x["text"] for x in lessons)
        # train on what is judged, publish version 1
        store = TrajectoryStore(buf)
        tok = load_tokenizer("builtin:tiny-qwen3")
        source = StoreDataSource(store, tokenizer=lambda: tok)
        samples = source.take(len(store.turns(status="judged")))
        source.mark_trained(samples, step=0)
        store.close()
        assert {s.session_id for s in samples} == {"s-secret", "s-other"}
        r = httpx.post(root + "/admin/update_weights_from_disk", headers=AUTH, timeout=120,
                       json={"model_path": str(v1), "weight_version": 1})
        assert r.status_code == 200, r.text
        # an export lying in the buffer folder
        assert _cli("export", "--rl-buffer-dir", str(buf), "--out", str(buf / "exports.jsonl")).returncode == 0
        assert files_containing(buf, SECRET) and files_containing(buf, OTHER)
        # a double undo of the session's turn: 404, and the server's access line names the turn
        assert httpx.delete(root + "/v1/feedback/s-secret:0", headers=AUTH).status_code == 404
        assert {p.name for p in map(Path, files_containing(run, "s-secret"))} == {"run.log", server.log_path.name}

        # a request of the session is streaming while it is forgotten
        started, forgotten, result = threading.Event(), threading.Event(), {}

        def stream():
            chunks = client(server).chat.completions.create(
                model="policy", stream=True, max_tokens=48, temperature=1.0,
                messages=[{"role": "user", "content": f"Remember: {SECRET}."}, {"role": "assistant", "content": "x"},
                          {"role": "user", "content": "Say it again, slowly."}],
                extra_headers={"X-Session-Id": "s-secret"})
            parts = []
            for i, chunk in enumerate(chunks):
                if i == 1:
                    started.set()
                    forgotten.wait(120)
                parts.append(chunk)
            result["chunks"] = len(parts)

        t = threading.Thread(target=stream)
        t.start()
        assert started.wait(120)
        cli = _cli("forget", "--session", "s-secret", "--rollback", "--url", root, "--admin-api-key", "sk-test",
                   "--json")
        forgotten.set()
        t.join(120)
        assert cli.returncode == 0, cli.stderr
        import json
        report = json.loads(cli.stdout)
        assert result["chunks"] > 1  # the stream finished normally
        # the streamed turn is 5th when the server recorded it before the forget came (a slow CLI start
        # under load: the server generates the 48 tokens without waiting for the client), else it is
        # never recorded; either way none of the session is left (checked below)
        assert (report["sessions"], report["feedback"]) == (1, 1) and report["turns"] in (4, 5), report
        assert report["lessons"] >= 1 and report["judgements"] == 3 and report["trained"] >= 1
        assert report["versions_trained_on"] == [1] and report["rollback_to"] == 0 and report["rolled_back"] == 0
        assert report["files_rewritten"] == ["exports.jsonl"] and report["scrubbed"] is True
        assert sorted(Path(p).name for p in report["logs_rewritten"]) == sorted(["run.log", server.log_path.name])
        assert files_containing(run, "s-secret") == [] and files_containing(run, "zebra-quartz-7781") == []
        # the trainer goes on appending to its log after the rewrite: at the new end, no hole
        os.write(run_log, b"INFO step 2 reward/mean=-0.5\n")
        assert (run / "run.log").read_bytes() == (
            b"INFO step 1 reward/mean=0.5\n(TrainActor pid=1) INFO:slime.guards.admission:s-other:0: rejected reply repeats "
            b"'note'\nINFO step 2 reward/mean=-0.5\n")
        assert "GET /healthz" in server.log()  # the server's other lines are kept
        assert httpx.get(root + "/healthz").json()["weight_version"] == 0

        # bad input: clear 4xx, nothing else lost
        for body, status in (({"session_id": "s-secret"}, 404), ({}, 400), ({"session_id": "s-other", "all": True}, 400),
                             ({"before": "yesterday"}, 400), ({"session_id": "s-other", "extra": 1}, 400)):
            r = httpx.post(root + "/admin/forget", headers=AUTH, json=body, timeout=60)
            assert r.status_code == status, (body, r.text)
            assert r.json()["error"]["message"]
        bad = _cli("forget", "--session", "s-secret", "--url", root, "--admin-api-key", "sk-test")
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "404" in bad.stderr
        store = TrajectoryStore(buf)
        assert {t.session_id for t in store.turns()} == {"s-other"} and len(store.turns("s-other")) == 3
        store.close()
        # the in-flight request of the forgotten session was not recorded; the session still serves
        converse(server, "s-secret", ["A new conversation under the same id."])
    os.close(run_log)
    assert files_containing(buf, SECRET) == [] and files_containing(run, SECRET) == []
    assert files_containing(buf, "zebra-quartz-7781") == []
    assert len(files_containing(buf, OTHER)) >= 2  # the database and the export keep the other session

    # on the store directly: --before a date in the past forgets nothing, --all everything
    out = _cli("forget", "--before", "2000-01-01", "--rl-buffer-dir", str(buf))
    assert out.returncode == 0 and out.stdout.startswith("forgot 0 session(s)")
    assert _cli("forget", "--all", "--rollback", "--rl-buffer-dir", str(buf)).returncode == 2
    bad = _cli("forget", "--all", "--run-log-dir", str(run), "--url", "http://127.0.0.1:9")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--run-log-dir" in bad.stderr
    assert files_containing(run, "s-other")  # the trainer's line on it in run.log
    out = _cli("forget", "--all", "--rl-buffer-dir", str(buf), "--run-log-dir", str(run))
    assert out.returncode == 0 and out.stdout.startswith("forgot 2 session(s)"), out.stdout + out.stderr
    assert f"removed their lines from 1 log file(s): {run / 'run.log'}" in out.stdout
    assert files_containing(buf, OTHER) == [] and files_containing(buf, "marmalade-osprey-4410") == []
    assert files_containing(run, "s-other") == [] and b"INFO step 2" in (run / "run.log").read_bytes()
