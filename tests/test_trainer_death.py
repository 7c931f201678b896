"""The trainer dying mid-step (issue 16): the train actor's process is SIGKILLed at a precise point
of a step (:mod:`slime.orchestration.fault_points`: it blocks there and the test kills it), ``slime/train.py``
reports it in one line naming what died, in which step and how to resume, and the resumed run
trains every turn exactly once: claims of the dead step go back, turns of a checkpointed step are
not trained again, turns marked trained by a step that was not saved are trained again (once).

Real Ray (the test process's Ray head on loopback, inside the suite's ``unshare -n``), the real trainer on
``builtin:tiny-qwen3``, the real SQLite store with recorded sessions imported offline."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from slime.orchestration.fault_points import FAULT_AT_ENV, FAULT_DIR_ENV, wait_reached
from tests.support.ray_head import driver_env

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]
TURNS, BATCH, STEPS = 6, 2, 3


def _sessions(path: Path) -> None:
    path.write_text("".join(json.dumps({"session_id": f"s{i}", "turns": [
        {"prompt": [{"role": "user", "content": f"question {i}"}], "response": f"answer {i}",
         "next_state": "thanks"}]}) + "\n" for i in range(TURNS)))


def _start(work: Path, ray_port: int, *args: str, fault: str | None = None,
           fault_dir: Path | None = None) -> subprocess.Popen:
    """``slime/train.py`` driving a run on the head at GCS ``ray_port`` (the shared ``ray_head``;
    the run's actors are Ray's to end with it). Its actors see the fault point and the thread
    count because ``SLIME_JOB_ENV`` names them (the driver carries them, as a launch script does)."""
    env = driver_env(ray_port, "SLIME_CALLER_CWD", "DATA_PATH", FAULT_AT_ENV, FAULT_DIR_ENV,
                     OMP_NUM_THREADS="1", SLIME_JOB_ENV=f"{FAULT_AT_ENV} {FAULT_DIR_ENV} OMP_NUM_THREADS")
    if fault:
        env.update({FAULT_AT_ENV: fault, FAULT_DIR_ENV: str(fault_dir)})
    return subprocess.Popen(
        [sys.executable, str(REPO / "slime" / "train.py"), "--model-path", "builtin:tiny-qwen3",
         "--data-path", "sessions.jsonl", "--custom-rm-path", "tests/plugins/low_ids_reward.py",
         "--rollout-batch-size", str(BATCH), "--num-rollout", str(STEPS), "--save", "./ckpt", "--save-interval", "1",
         "--log-dir", "./logs", *args],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _trained(work: Path) -> dict[int, tuple[str, int | None]]:
    """``{turn id: (status, trained_step)}`` of the store's main turns."""
    db = sqlite3.connect(work / "ckpt" / "rl_buffer" / "trajectories.sqlite")
    try:
        return {i: (s, t) for i, s, t in db.execute(
            "SELECT id, status, trained_step FROM turns WHERE turn_type='main' ORDER BY id")}
    finally:
        db.close()


def _kill_at(work: Path, ray_port: int, fault: str, *args: str) -> tuple[str, str]:
    """Run (with ``args``) until a process blocks at ``fault``, SIGKILL it, and return the run's
    (stdout, stderr)."""
    faults = work / f"faults-{fault.replace('@', '-')}"
    faults.mkdir()
    run = _start(work, ray_port, *args, fault=fault, fault_dir=faults)
    try:
        pid = wait_reached(faults, fault, timeout_s=600, proc=run)
        os.kill(pid, signal.SIGKILL)
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 1, err[-3000:]
    return out, err


def _resume(work: Path, ray_port: int) -> dict:
    run = _start(work, ray_port, "--resume-from-checkpoint", "ckpt")
    out, err = run.communicate(timeout=900)
    assert run.returncode == 0, out[-2000:] + err[-4000:]
    return json.loads(out[out.index("{"):])


def _assert_one_line_report(err: str, work: Path, step: int, resume_words: str) -> None:
    assert "Traceback" not in err, err[-4000:]
    errors = [line for line in err.splitlines() if "error" in line.lower() and "slime/train.py" in line]
    assert len(errors) == 1, errors
    line = err.rstrip().splitlines()[-1]
    assert line == errors[0], err[-3000:]
    assert line.startswith("slime/train.py: error: the train actor (TrainActor, pid "), line
    assert f"died in step {step} (Ray: worker exit type SYSTEM_ERROR: the process was killed" in line, line
    assert f"resume with --resume-from-checkpoint {work / 'ckpt'} ({resume_words}" in line, line


def _assert_each_turn_trained_once(work: Path, summary: dict, start: int) -> None:
    final = _trained(work)
    assert {status for status, _ in final.values()} == {"trained"}, final
    # every turn in exactly one step of the resumed lineage; every step trained a full batch
    assert Counter(step for _, step in final.values()) == {s: BATCH for s in range(1, STEPS + 1)}, final
    assert summary["start_step"] == start and summary["steps"] == STEPS - start
    assert summary["samples_trained"] == BATCH * (STEPS - start)
    state = json.loads((work / "ckpt" / "checkpoint-latest" / "trainer_state.json").read_text())
    assert state["step"] == STEPS and state["weight_version"] == STEPS


RESUME = ("--resume-from-checkpoint", "ckpt")


def test_killed_at_three_points_of_a_run_and_resumed_each_time(ray_head, tmp_path):
    """One run killed at three points in turn, resumed after each kill (one lineage, four
    processes: each kill's state is checked before the next resume):

    1. after step 1's turns were marked trained but before checkpoint-1 was written (no
       checkpoint at all): the report says resuming starts over; the resume starts at step 0 from
       the base model and trains step 1's turns again (they are in no saved weights);
    2. inside step 2's optimizer work (its turns claimed, not marked): the claims go back, nothing
       is left claimed, step 1's turns stay trained by step 1;
    3. with checkpoint-2's files written but not yet renamed into place (step 2's turns marked
       trained): checkpoint-1 stays the newest;

    the last resume continues from checkpoint-1, trains step 2's turns again (once), cleans up the
    half-written folder, and in the end every turn was trained in exactly one step of the lineage."""
    work, port = tmp_path / "run", ray_head[0]
    work.mkdir()
    _sessions(work / "sessions.jsonl")

    _, err = _kill_at(work, port, "save@1")
    _assert_one_line_report(err, work, 1, "no checkpoint yet: it starts over from the base model")
    after_kill = _trained(work)
    assert Counter(s for s, _ in after_kill.values()) == {"trained": BATCH, "judged": TURNS - BATCH}, after_kill
    assert not (work / "ckpt" / "checkpoint-latest").exists()

    _, err = _kill_at(work, port, "train_step@2", *RESUME)  # resumes at step 0, trains step 1, dies in step 2
    _assert_one_line_report(err, work, 2, "checkpoint-1; turns trained after it are trained again")
    after_kill = _trained(work)
    step1 = {i for i, (s, t) in after_kill.items() if t == 1}
    assert len(step1) == BATCH and all(after_kill[i][0] == "trained" for i in step1)
    assert {s for i, (s, _) in after_kill.items() if i not in step1} == {"judged"}, after_kill
    state = json.loads((work / "ckpt" / "checkpoint-latest" / "trainer_state.json").read_text())
    assert state["step"] == 1 and state["weight_version"] == 1

    _, err = _kill_at(work, port, "save_written@2", *RESUME)
    _assert_one_line_report(err, work, 2, "checkpoint-1; turns trained after it are trained again")
    assert Counter(t for _, t in _trained(work).values()) == {1: BATCH, 2: BATCH, None: TURNS - 2 * BATCH}
    assert list((work / "ckpt").glob(".tmp-checkpoint-2-*"))

    summary = _resume(work, port)
    _assert_each_turn_trained_once(work, summary, start=1)
    assert summary["resumed_weight_version"] == 1
    assert {i for i, (_, t) in _trained(work).items() if t == 1} == step1  # not trained again
    assert not list((work / "ckpt").glob(".tmp-checkpoint-*"))


def test_killed_during_a_promotion_resumes_from_the_last_promoted_version(ray_head, tmp_path):
    """The trainer SIGKILLed while the promotion gate measures version 2 (trained, not yet
    checkpointed or served), with ``--save-interval`` far beyond the run: version 1 was
    checkpointed when it was promoted, so the resume starts from it (not from the base model),
    serves it again, trains step 2's turns once more and ends with every served version one that
    passed the gate. The thresholds are wide so that the tiny random model's verdicts are all passes:
    the test is about what a kill loses, not about the verdicts."""
    work, port = tmp_path / "run", ray_head[0]
    work.mkdir()
    _sessions(work / "sessions.jsonl")
    wide = ("--save-interval", "100", "--gate-max-nll-rise", "100", "--gate-logprob-margin", "100")
    _, err = _kill_at(work, port, "gate@2", *wide)
    _assert_one_line_report(err, work, 2, "checkpoint-1; turns trained after it are trained again")
    state = json.loads((work / "ckpt" / "checkpoint-latest" / "trainer_state.json").read_text())
    assert state["step"] == 1 and state["weight_version"] == 1  # written at promotion, not by the interval

    run = _start(work, port, *RESUME, *wide)
    out, err = run.communicate(timeout=900)
    assert run.returncode == 0, out[-2000:] + err[-4000:]
    summary = json.loads(out[out.index("{"):])
    assert summary["resumed_weight_version"] == 1
    _assert_each_turn_trained_once(work, summary, start=1)
    versions = summary["promotion_gate"]["versions"]
    assert [v["version"] for v in versions if v["served"]] == [2, 3], versions
    assert all(v["passed"] for v in versions if v["served"]), versions
