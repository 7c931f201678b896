"""The terminal of ``make run`` and of the launch scripts: one compact line per train step from the
metrics the trainer logs (``slime.orchestration.monitor.MetricsLogger``), and everything else (child processes,
warnings) in the run's log file."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import textwrap
import threading
import time

from openclaw_rl.launch.progress import total_steps
from openclaw_rl.main_job.progress import StepProgress, step_line
from slime.orchestration.monitor import MetricsLogger


def test_one_line_per_step_with_satisfaction(tmp_path):
    logger = MetricsLogger(tmp_path / "logs", "run-x")
    console, verdicts = io.StringIO(), [True, False, True]
    progress = StepProgress(tmp_path / "logs", 16, console, lambda: verdicts, poll_s=60)
    logger.log(1, {"reward/mean": 0.25, "rollout/samples": 8, "weight_version": 2, "gate/passed": 1.0,
                   "train/loss": 0.0123, "train/approx_kl": 0.0004, "train/pg_loss": 1.0, "backlog/judged": 3})
    assert progress.poll() == 1
    verdicts += [False]
    logger.log(2, {"reward/mean": -0.5, "rollout/samples": 8, "weight_version": 2, "gate/passed": 0.0,
                   "train/approx_kl": 0.0, "train/kl_loss": 0.1234})
    progress.stop()
    logger.close()
    lines = console.getvalue().splitlines()
    assert len(lines) == 2 and all(len(line) < 140 for line in lines)
    assert lines[0].startswith("step 1/16 | reward +0.25 (8) | satisfaction 0.67 (3 replies) | serving v2 | gate pass | "
                               "loss 0.0123 | KL 0.0004 | ")
    assert lines[1].startswith("step 2/16 | reward -0.50 (8) | satisfaction 0.00 (1 replies) | serving v2 | gate FAIL")
    assert "| KL to ref 0.1234 |" in lines[1]  # the KL penalty's, not the in-step KL (0 on-policy)
    assert step_line({"step": 3}, None, None, 1.0) == "step 3 | reward - (-) | serving v- | gate - | loss - | KL - | 1 s"


def test_the_collapse_guard_says_what_it_did():
    """The make run console names a skipped step's spike and a rollback (the metrics the
    collapse run of docs/learning.md logged at its steps 1 and 2)."""
    skipped = {"step": 1, "guard/skipped": 1.0, "guard/spike_update_kl": 1.0, "guard/spike_value": 5.101,
               "guard/spike_baseline": 0.5}
    lines = step_line(skipped, 4, None, 1.0).splitlines()
    assert len(lines) == 2 and lines[1] == ("  collapse guard: step skipped (update_kl 5.1 vs baseline 0.5); "
                                            "the weights stay as they were")
    event = ("collapse guard: 2 spikes in the last 2 steps at step 2 (last: update_kl 3.933 vs baseline 0.5 "
             "(x7.87)): rolled back to initial (weights and optimizer state) as weight version 1; lr 0.1 -> 0.05")
    lines = step_line({**skipped, "step": 2, "guard/event": event}, 4, None, 1.0).splitlines()
    assert lines[1] == "  " + event
    assert "\n" not in step_line({"step": 3, "guard/skipped": 0.0}, 4, None, 1.0)
    clipped = {"step": 4, "guard/skipped": 0.0, "guard/clipped": 1.0, "guard/clip_scale": 0.573,
               "guard/spike_grad_norm": 1.0, "guard/spike_value": 79.76, "guard/spike_baseline": 9.138}
    assert step_line(clipped, 4, None, 1.0).splitlines()[1] == (
        "  collapse guard: gradient clipped x0.573 (grad_norm 79.8 vs baseline 9.14); the step was kept")


def test_library_output_goes_to_the_log_file(tmp_path):
    script = textwrap.dedent(f"""
        import subprocess, sys, warnings
        from pathlib import Path
        from openclaw_rl.main_job.progress import console_to_log
        console = console_to_log(Path({str(tmp_path / 'run.log')!r}))
        console.write("step 1/2 | reward +1.00\\n")
        print("INFO library chatter")
        warnings.warn("a library warning")
        subprocess.run([sys.executable, "-c", "import sys; print('(TrainActor pid=1) worker line', file=sys.stderr)"])
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "step 1/2 | reward +1.00\n" and r.stderr == ""
    log = (tmp_path / "run.log").read_text()
    assert "INFO library chatter" in log and "a library warning" in log and "worker line" in log


def test_a_launch_scripts_console_follows_only_its_own_run(tmp_path):
    """``python -m openclaw_rl.launch.progress`` (what a launch script runs beside its Ray job): the
    dashboard's address once the run's log says the server is up, then one line per step of the
    run started after ``--since`` (an earlier run's metrics in the same ``LOG_DIR`` are not shown);
    the step count is the trainer's last ``--num-rollout``; SIGTERM prints what is left."""
    logs, run_log = tmp_path / "logs", tmp_path / "logs" / "job.log"
    old = MetricsLogger(logs, "run-old")
    old.log(1, {"reward/mean": 0.9})
    old.close()
    time.sleep(1.1)  # the follower's --since (whole seconds) is after the old run's last write
    run_log.write_text("")
    follower = subprocess.Popen(
        [sys.executable, "-m", "openclaw_rl.launch.progress", "--log-dir", str(logs), "--run-log", str(run_log),
         "--since", str(int(time.time())), "--open-ended-steps", "100000", "--poll-s", "0.2", "--",
         "--num-rollout", "100000", "--lr", "1e-6", "--num-rollout", "2"], stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(follower.stdout), daemon=True)
    reader.start()

    def wait_for(n: int) -> None:
        deadline = time.time() + 120
        while len(lines) < n and time.time() < deadline and follower.poll() is None:
            time.sleep(0.1)

    try:
        with run_log.open("a") as f:
            f.write("(RolloutManager pid=7) INFO:httpx:HTTP Request: GET http://127.0.0.1:9/healthz\n"
                    "(RolloutManager pid=7) WARNING:openclaw_rl.rollout.service:serving at http://127.0.0.1:9/v1; "
                    "dashboard: http://127.0.0.1:9/dashboard?key=<admin key>\n")
        wait_for(1)  # up and following
        logger = MetricsLogger(logs, "run-new")
        logger.log(1, {"reward/mean": -1.0, "rollout/samples": 1, "weight_version": 1, "train/loss": 0.5})
        wait_for(2)
        logger.log(2, {"reward/mean": -1.0, "rollout/samples": 1, "weight_version": 2, "train/loss": 0.5})
        logger.close()
    finally:
        follower.send_signal(signal.SIGTERM)  # the last step's line is printed on the way out
        follower.wait(60)
        reader.join(10)
    assert follower.returncode == 0
    lines = [line.rstrip("\n") for line in lines]
    assert lines[0] == "serving at http://127.0.0.1:9/v1; dashboard: http://127.0.0.1:9/dashboard?key=<admin key>"
    assert [line.split(" | ")[:3] for line in lines[1:]] == [["step 1/2", "reward -1.00 (1)", "serving v1"],
                                                             ["step 2/2", "reward -1.00 (1)", "serving v2"]]
    assert total_steps(["--num-rollout", "100000"], open_ended=100000) is None
    assert total_steps(["--num-rollout=7"], open_ended=100000) == 7 and total_steps([], 100000) is None


def test_tensorboard_reads_back_every_numeric_metric_per_step(tmp_path):
    """The events under ``<run>/tb`` are what TensorBoard shows: each numeric metric per step, read
    back with TensorBoard's own reader (non-numeric and non-finite values stay in the JSONL only)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util.tensor_util import make_ndarray

    logger = MetricsLogger(tmp_path / "logs", "run-tb")
    logger.log(1, {"reward/mean": 0.25, "loss": 0.5, "note": "text", "bad": float("nan")})
    logger.log(2, {"reward/mean": -0.5, "loss": 0.125})
    logger.close()
    events = EventAccumulator(str(tmp_path / "logs" / "run-tb" / "tb"))
    events.Reload()
    assert sorted(events.Tags()["tensors"]) == ["loss", "reward/mean"]
    series = {tag: [(e.step, float(make_ndarray(e.tensor_proto))) for e in events.Tensors(tag)]
              for tag in ("reward/mean", "loss")}
    assert series == {"reward/mean": [(1, 0.25), (2, -0.5)], "loss": [(1, 0.5), (2, 0.125)]}
