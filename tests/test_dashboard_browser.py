"""The dashboard in a real browser (Debian's chromium driven by Playwright) during a live run: the
Combine launch script submits a real Ray training job (the test process's private Ray head), which
starts the intercept server on the tiny model and trains one judged turn per step while the test
talks to it. The train actor is held at the start of step 1 (:mod:`slime.orchestration.fault_points`, carried
into the job by ``SLIME_JOB_ENV``) while a person, in the browser:

* rates -1 a turn the judge voted +1: the step that trains it logs the reward -1;
* deletes a lesson: the step that trains its turn uses no hint (Combine's RL branch only);
* forgets a conversation: its unique text is then in no file of the buffer folder, nor of the
  run's log folder;
* after three steps, rolls serving back to version 0: the server answers from it again.

A screenshot of each page is saved (``screens/`` under the test's temporary folder)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.server.launcher import free_port
from slime.orchestration.fault_points import FAULT_AT_ENV, FAULT_DIR_ENV, release, wait_reached
from tests.support.control import AUTH, converse, files_containing
from tests.support.ray_head import job_env

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.ray, pytest.mark.slow]
REPO = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium")
UNIQUE = "okapi-tundra-5521 is my locker code"
PRAISE = "Perfect, thank you, that is exactly right!"


def _greedy(root: str) -> tuple[str, list[float]]:
    """The served weights' greedy reply to a fixed prompt and its logprobs (a side turn: never trained)."""
    r = httpx.post(root + "/v1/chat/completions", headers={**AUTH, "X-Turn-Type": "side"}, timeout=120,
                   json={"messages": [{"role": "user", "content": "same prompt"}], "max_tokens": 8, "temperature": 0,
                         "logprobs": True})
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    return choice["message"]["content"], [t["logprob"] for t in choice["logprobs"]["content"]]


def _wait_up(root: str, run: subprocess.Popen, console: Path, timeout_s: float = 600) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        assert run.poll() is None, console.read_text()[-4000:]
        try:
            if httpx.get(root + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise TimeoutError(f"the job's server did not answer in {timeout_s:.0f} s:\n{console.read_text()[-4000:]}")


def _metrics(logs: Path, steps: int, run: subprocess.Popen, console: Path, timeout_s: float = 600) -> list[dict]:
    """The run's first ``steps`` metrics rows, once the trainer has logged them."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        rows = [json.loads(line) for p in logs.glob("run-*/metrics.jsonl") for line in p.read_text().splitlines()]
        if len(rows) >= steps:
            return rows
        assert run.poll() is None, console.read_text()[-4000:]
        time.sleep(1)
    raise TimeoutError(f"{steps} steps not logged in {timeout_s:.0f} s:\n{console.read_text()[-4000:]}")


def _trained_step(buf: Path, uid: str) -> int | None:
    store = TrajectoryStore(buf)
    try:
        return store.read("SELECT trained_step FROM turns WHERE turn_uid=?", (uid,))[0][0]
    finally:
        store.close()


def _stop(run: subprocess.Popen, root: str) -> None:
    """SIGTERM the launch script (it stops its job; the trainer stops the server it started)."""
    if run.poll() is None:
        run.send_signal(signal.SIGTERM)
        try:
            run.wait(180)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            httpx.get(root + "/healthz", timeout=2)
        except httpx.HTTPError:
            return
        time.sleep(1)
    raise AssertionError("the job's server still answers after the run was stopped")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is installed by `make install`")
def test_dashboard_during_a_live_ray_run(ray_head, tmp_path):
    buf, logs, screens, faults = (tmp_path / n for n in ("rl_buffer", "logs", "screens", "faults"))
    screens.mkdir()
    faults.mkdir()
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    env = job_env(*ray_head, MODEL_PATH="builtin:tiny-qwen3", PORT=str(port), RL_BUFFER_DIR=str(buf),
                  LOG_DIR=str(logs), CKPT_SAVE_DIR=str(tmp_path / "ckpt"), CKPT_ARGS="--save-interval 100",
                  ROLLOUT_ARGS="--rollout-batch-size 1 --num-rollouts-per-prompt 1 --num-rollout 4 "
                               "--rollout-max-response-len 8",
                  OPTIMIZER_ARGS="--lr 5e-2 --adam-beta2 0.99",
                  PRM_ARGS="--num-judge-workers 1 --prm-mode lexical",  # the rule-based judges: deterministic
                  # a tiny random model's replies are cut and degenerate by nature: train them anyway, so
                  # each version's weights differ; no gate or guard on a random policy
                  EXTRA_ARGS="--api-key sk-test --truncated-replies train --degenerate-samples train "
                             "--collapse-guard off --promotion-gate off",
                  **{FAULT_AT_ENV: "train_step@1", FAULT_DIR_ENV: str(faults),
                     "SLIME_JOB_ENV": f"{FAULT_AT_ENV} {FAULT_DIR_ENV}"})
    console = tmp_path / "console.txt"
    run = subprocess.Popen(["bash", str(REPO / "openclaw-combine" / "run_qwen3_7b_openclaw_combine.sh")], env=env,
                           stdout=console.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_up(root, run, console)
        server = SimpleNamespace(base_url=root + "/v1", api_key="sk-test")
        version0 = _greedy(root)
        converse(server, "s-warm", ["Hello there!", PRAISE])  # step 1's turn; the trainer then holds
        wait_reached(faults, "train_step@1", timeout_s=600, proc=run)
        converse(server, "s-praise", ["What is two plus two?", PRAISE])
        converse(server, "s-lesson", ["Bonjour!", "No, that's wrong. You should answer in French."])
        converse(server, "s-forget", [f"Remember: {UNIQUE}.", PRAISE])

        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("dialog", lambda d: d.accept())
            page.goto(f"{root}/dashboard?key=sk-test")
            page.wait_for_selector("body[data-loaded='1']")
            # the job's judge votes while step 1 is held
            page.wait_for_function("(document.querySelector(\"tr[data-turn='s-praise:0'] .judge-vote\") || {})"
                                   ".innerText === '+1'", timeout=300_000)
            page.screenshot(path=screens / "conversations.png", full_page=True)
            page.locator("tr[data-turn='s-praise:0'] .rate-down").click()
            page.wait_for_function("document.querySelector(\"tr[data-turn='s-praise:0'] .rating\")"
                                   ".innerText.startsWith('-1')")

            page.goto(f"{root}/dashboard?key=sk-test#lessons")
            page.wait_for_selector("tr[data-lesson]", timeout=300_000)
            assert page.locator("tr[data-lesson] .lesson-text").input_value() == "You should answer in French."
            page.screenshot(path=screens / "lessons.png", full_page=True)
            page.locator("tr[data-lesson] .lesson-delete").click()
            page.wait_for_selector("tr[data-lesson]", state="detached")

            page.goto(f"{root}/dashboard?key=sk-test#conversations")
            page.wait_for_selector("div[data-session='s-forget']")
            assert files_containing(buf, UNIQUE)
            page.locator("div[data-session='s-forget'] .forget").click()
            page.wait_for_selector("div[data-session='s-forget']", state="detached")
            for folder in (buf, logs):
                assert files_containing(folder, UNIQUE) == [] and files_containing(folder, "okapi-tundra-5521") == []
            assert page.locator("div[data-session='s-praise']").count() == 1

            # the run goes on: step 1 (s-warm), step 2 (s-praise, rated), step 3 (s-lesson, its lesson deleted)
            release(faults, "train_step@1")
            page.goto(f"{root}/dashboard?key=sk-test#training")
            rows = _metrics(logs, 3, run, console)
            page.wait_for_function("document.querySelectorAll('#training-table tbody tr').length === 3")
            page.screenshot(path=screens / "training.png", full_page=True)
            assert [r["reward/mean"] for r in rows] == [1.0, -1.0, -1.0]  # s-praise's judge said +1; rated -1
            assert (_trained_step(buf, "s-praise:0"), _trained_step(buf, "s-lesson:0")) == (2, 3)
            assert (rows[2]["combine/n_rl"], rows[2]["combine/n_both"], rows[2]["combine/n_opd"]) == (1, 0, 0)
            assert rows[2]["judge/hint_accepted"] >= 1  # the judge did accept the hint: the deleted lesson

            served = _greedy(root)
            assert httpx.get(root + "/healthz").json()["weight_version"] == 3
            assert served[1] != pytest.approx(version0[1], abs=1e-3)  # three steps moved the weights
            page.goto(f"{root}/dashboard?key=sk-test#versions")
            page.wait_for_selector("tr[data-version='3']")
            page.screenshot(path=screens / "versions.png", full_page=True)
            page.locator("tr[data-version='0'] .rollback").click()
            page.wait_for_selector("body[data-serving='0']")
            assert httpx.get(root + "/healthz").json()["weight_version"] == 0
            rolled = _greedy(root)
            assert rolled[0] == version0[0] and rolled[1] == pytest.approx(version0[1], abs=1e-4)

            page.goto(f"{root}/dashboard?key=sk-test#storage")
            page.wait_for_selector("#storage-files tbody tr")
            assert "trajectories.sqlite" in page.locator("#storage-files").inner_text()
            page.screenshot(path=screens / "storage.png", full_page=True)
            assert httpx.get(root + "/dashboard").status_code == 401  # without the key
            browser.close()
    finally:
        _stop(run, root)
    assert sorted(p.name for p in screens.iterdir()) == ["conversations.png", "lessons.png", "storage.png",
                                                         "training.png", "versions.png"]
    # the launch script's console: the dashboard's address and a line per step; the job's output is in its log
    text = console.read_text()
    assert f"serving at {root}/v1; dashboard: {root}/dashboard" in text, text
    assert [line.split(" | ")[0] for line in text.splitlines() if line.startswith("step ")] == \
        ["step 1/4", "step 2/4", "step 3/4"], text
    assert "(TrainActor pid=" not in text and "(TrainActor pid=" in next(logs.glob("openclaw-*.log")).read_text()
