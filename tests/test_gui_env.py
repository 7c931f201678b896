"""gui-rl's environment (issue 14): MiniWoB++ pages in real headless Chromium driven by Playwright.

Oracle: scripted correct actions, found from the text observation alone, score +1 on several
MiniWoB tasks and wrong ones -1 (MiniWoB's own reward). Pool: the upstream GUI API on a real
uvicorn server, with the bad inputs of the issue (a page that never loads, a click outside the
screen, a malformed action, a browser killed by pid): each gets a clear observation, the episode
is scored, the slot is recycled, and no browser process outlives the server (checked by pid).
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import struct
import time
import zlib

import httpx
import pytest

from openclaw_rl.envs.gui.actions import ActionError, parse_action
from openclaw_rl.envs.gui.backends import check_backend
from openclaw_rl.envs.gui.browser import BrowserError, process_group_alive
from openclaw_rl.envs.gui.session import TaskConfigError

pytestmark = pytest.mark.skipif(not (shutil.which("chromium") and shutil.which("chromedriver")),
                                reason="Debian chromium / chromium-driver not installed (make install)")


def rows_of(text: str) -> list[dict]:
    """The element table of a text observation as dicts (tag, name, text, value, x, y)."""
    lines = [line for line in text.splitlines() if "\t" in line]
    out = []
    for line in lines[1:]:
        tag, name, txt, value, center, _size = line.split("\t")
        x, y = center.split(",")
        out.append({"tag": tag, "name": name, "text": txt, "value": value, "x": int(x), "y": int(y)})
    return out


def find(rows: list[dict], **match) -> dict:
    for row in rows:
        if all(row[k] == v for k, v in match.items()):
            return row
    raise AssertionError(f"no element {match} in {rows}")


def quoted(instruction: str) -> str:
    return instruction.split('"')[1]


# -- the action space (no browser) ----------------------------------------------------------------
def test_pyautogui_actions_parse_to_ops_without_running_code(tmp_path):
    ops = parse_action("```python\nimport pyautogui\npyautogui.click(10, 20)\npyautogui.typewrite('hi')\n"
                       "pyautogui.press('enter')\npyautogui.hotkey('ctrl', 'a')\npyautogui.scroll(-3)\n```")
    assert [o.kind for o in ops] == ["click", "type", "press", "hotkey", "scroll"]
    assert (ops[0].x, ops[0].y, ops[1].text, ops[2].keys, ops[3].keys, ops[4].amount) == (
        10, 20, "hi", ("Enter",), ("Control", "a"), -3)
    assert [parse_action(a)[0].kind for a in ("WAIT", "DONE", " FAIL ")] == ["WAIT", "DONE", "FAIL"]
    marker = tmp_path / "pwned"
    for bad in (f"__import__('os').system('touch {marker}')", f"open('{marker}', 'w')",
                "pyautogui.click(x, 2)", "pyautogui.click(1)", "pyautogui.launch()", "pyautogui.click(",
                "pyautogui.press('nokey')", "", 42, "pyautogui.click(*[1, 2])"):
        with pytest.raises(ActionError):
            parse_action(bad)
    assert not marker.exists()


def test_backend_names():
    assert check_backend(None) == "playwright" and check_backend("selenium") == "selenium"
    with pytest.raises(BrowserError, match="must be playwright or selenium"):
        check_backend("firefox")


# -- oracle: MiniWoB's own reward through the real browser ----------------------------------------
@pytest.fixture(scope="module", params=["playwright", "selenium"])
def session(request):
    """One browser of each backend (SCREENSHOT_BACKEND) for the module's episodes."""
    from openclaw_rl.envs.gui.backends import make_browser
    from openclaw_rl.envs.gui.config import GuiConfig
    from openclaw_rl.envs.gui.session import GuiSession

    browser = make_browser(640, 480, request.param)
    s = GuiSession(browser, GuiConfig(observation_type="screenshot_a11y_tree", backend=request.param))
    yield s
    driver = getattr(getattr(browser, "_service", None), "process", None)
    browser.kill()
    assert not process_group_alive(browser.pgid)
    assert driver is None or driver.poll() is not None  # chromedriver ended too


def _solve(session, task: str, seed: int, correct: bool) -> float:
    first = session.reset({"task": task, "seed": seed})
    instruction, rows = first["info"]["instruction"], rows_of(first["observation"]["text"])
    if task == "click-button":
        target = quoted(instruction)
        buttons = [r for r in rows if r["tag"] == "button"]
        pick = next(b for b in buttons if (b["text"] == target) == correct)
        actions = [f"pyautogui.click({pick['x']}, {pick['y']})"]
    elif task == "click-link":
        target = quoted(instruction)
        links = [r for r in rows if r["tag"] == "span" and r["text"]]
        pick = next(r for r in links if (r["text"] == target) == correct)
        actions = [f"pyautogui.click({pick['x']}, {pick['y']})"]
    elif task == "enter-text":
        field, submit = find(rows, tag="input_text"), find(rows, tag="button", text="Submit")
        word = quoted(instruction) if '"' in instruction and quoted(instruction).strip() else \
            next(r["text"] for r in rows if r["tag"] == "span")
        actions = [f"pyautogui.click({field['x']}, {field['y']})",
                   f"pyautogui.typewrite({(word if correct else word + 'x')!r})",
                   f"pyautogui.click({submit['x']}, {submit['y']})"]
    elif task == "focus-text":
        field = find(rows, tag="input_text")
        actions = [f"pyautogui.click({field['x']}, {field['y']})" if correct else "pyautogui.click(150, 200)", "DONE"]
    else:
        raise AssertionError(task)
    for action in actions:
        obs, reward, done, info = session.step(action)
        assert info["action_error"] is None, info
        if done:
            assert reward == session.evaluate()
            break
    return session.evaluate()


@pytest.mark.parametrize("task", ["click-button", "click-link", "enter-text", "focus-text"])
def test_oracle_correct_actions_score_plus_one_and_wrong_ones_minus_one(session, task):
    for seed in (1, 2):
        assert _solve(session, task, seed, correct=True) == 1.0, (task, seed, session.reason)
        assert _solve(session, task, seed, correct=False) == -1.0, (task, seed)
    # the wrong branch's -1: MiniWoB's own negative reward, or (focus-text: clicked elsewhere, DONE) no success
    assert session.raw_reward is None or session.raw_reward <= 0


def test_observation_screenshot_is_a_png_of_the_screen(session):
    first = session.reset({"task": "click-button", "seed": 0})
    png = base64.b64decode(first["observation"]["screenshot_b64"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (640, 480)
    assert zlib.crc32(png) != 0 and first["observation"]["instruction"].startswith("Click on the")
    obs, reward, done, info = session.step("pyautogui.click(640, 10)")  # x == width: off screen
    assert "outside the screen" in info["action_error"] and not done and reward == 0
    assert obs["text"].startswith("action error:")
    obs, reward, done, info = session.step("rm -rf /")
    assert "not valid Python" in info["action_error"] and not done
    obs, reward, done, info = session.step("FAIL")
    assert done and reward == -1.0 and session.evaluate() == -1.0


def test_an_episode_of_a_text_policy_takes_no_screenshot(session, monkeypatch):
    """``"screenshot": false`` (what GuiTextEnv sends for a policy that cannot see images) leaves
    the capture out of every observation although the observation type has a screenshot."""
    assert session.config.wants_screenshot
    shots = []
    real = session.browser.screenshot
    monkeypatch.setattr(session.browser, "screenshot", lambda: shots.append(1) or real())
    first = session.reset({"task": "click-button", "seed": 0, "screenshot": False})
    obs, _, _, _ = session.step("WAIT")
    assert first["observation"]["screenshot_b64"] is None and obs["screenshot_b64"] is None and not shots
    assert first["observation"]["text"]  # the element text is still there
    assert session.reset({"task": "click-button", "seed": 0})["observation"]["screenshot_b64"] and shots == [1]
    with pytest.raises(TaskConfigError, match="screenshot must be true or false"):
        session.reset({"task": "click-button", "screenshot": "no"})


def test_the_text_env_asks_for_screenshots_only_for_a_vision_policy(monkeypatch):
    from openclaw_rl.envs.gui.config import gui_flags
    from openclaw_rl.envs.gui.env import GuiTextEnv

    flags = gui_flags({"GUI_OBSERVATION_TYPE": "screenshot_a11y_tree"})
    task = {"task_config": {"task": "click-button", "seed": 3}}
    assert GuiTextEnv("click-button#3", task, flags).task_config["screenshot"] is False
    assert GuiTextEnv("click-button#3", {**task, "image_observations": True}, flags).task_config["screenshot"] is True


# -- the pool server --------------------------------------------------------------------------------
BACKENDS = ["playwright", pytest.param("selenium", marks=pytest.mark.slow)]


def _serve(tmp_path, *args, env=None):
    from tests.test_pool_server import serve

    return serve(tmp_path, "openclaw_rl.envs.gui.pool_server", *args,
                 env={"GUI_OBSERVATION_TYPE": "screenshot_a11y_tree", **(env or {})})


@pytest.mark.parametrize("backend", BACKENDS)
def test_pool_api_episode_bad_input_recycle_and_no_leak(tmp_path, backend):
    with _serve(tmp_path, "--max-envs", "2", "--prewarm-envs", "1", env={"SCREENSHOT_BACKEND": backend}) as (url, proc), \
            httpx.Client(timeout=60) as http:
        assert http.get(f"{url}/healthz").json()["ok"] is True
        deadline = time.monotonic() + 30
        while http.get(f"{url}/status").json()["browsers"]["warm"] < 1:
            assert time.monotonic() < deadline, "prewarm did not finish"
            time.sleep(0.2)
        status = http.get(f"{url}/status").json()
        assert status["pool"]["total_envs"] == 1 and status["pool"]["max_envs"] == 2
        lease = http.post(f"{url}/allocate", json={}).json()["lease_id"]
        other = http.post(f"{url}/allocate", json={"request_id": "b"}).json()["lease_id"]
        full = http.post(f"{url}/allocate", json={"request_id": "c"})
        assert full.status_code == 429 and full.json()["error"]["code"] == "pool_full" and full.headers["retry-after"]

        bad = http.post(f"{url}/reset", json={"lease_id": lease, "task_config": {"task": "no-such-page"}})
        assert bad.status_code == 422 and "unknown MiniWoB task" in bad.json()["error"]["message"]
        assert http.post(f"{url}/step", json={"lease_id": "nope", "action": "WAIT"}).status_code == 404
        first = http.post(f"{url}/reset", json={"lease_id": lease, "task_config": {"task": "click-button", "seed": 5}}).json()
        target = quoted(first["info"]["instruction"])
        button = find(rows_of(first["observation"]["text"]), tag="button", text=target)
        step = http.post(f"{url}/step", json={"lease_id": lease, "action": "pyautogui.click(-5, 3000)"}).json()
        assert "outside the screen" in step["info"]["action_error"] and step["done"] is False
        step = http.post(f"{url}/step", json={"lease_id": lease, "action": {"not": "text"}}).json()
        assert "must be a string" in step["info"]["action_error"] and step["done"] is False
        got = http.post(f"{url}/get_obs", json={"lease_id": lease}).json()["observation"]
        assert got["screenshot_b64"] and got["instruction"] == first["info"]["instruction"]
        step = http.post(f"{url}/step", json={"lease_id": lease, "action": f"pyautogui.click({button['x']}, {button['y']})",
                                              "sleep_after_execution": 0.1}).json()
        assert step["done"] is True and step["reward"] == 1.0 and step["info"]["raw_reward"] > 0
        assert http.post(f"{url}/evaluate", json={"lease_id": lease}).json() == {"score": 1.0}
        after = http.post(f"{url}/step", json={"lease_id": lease, "action": "WAIT"}).json()
        assert after["done"] and "already over" in after["info"]["action_error"]

        # a browser killed by its pid: the episode ends with an error, scores -1, its slot is replaced
        reset = http.post(f"{url}/reset", json={"lease_id": other, "task_config": {"task": "click-button", "seed": 1}}).json()
        pids_before = set(http.get(f"{url}/status").json()["browsers"]["pids"])
        assert len(pids_before) == 2 and reset["info"]["browser_pid"] in pids_before
        assert http.post(f"{url}/close", json={"lease_id": lease}).json() == {"ok": True}
        recycled = http.get(f"{url}/status").json()["browsers"]
        assert recycled["recycled"] == 1 and recycled["warm"] == 1 and set(recycled["pids"]) == pids_before
        os.killpg(reset["info"]["browser_pid"], signal.SIGKILL)
        step = http.post(f"{url}/step", json={"lease_id": other, "action": "pyautogui.click(10, 10)"}).json()
        assert step["done"] is True and step["reward"] == -1.0 and "browser crashed" in step["info"]["error"]
        assert "browser crashed" in step["observation"]["text"]
        assert http.post(f"{url}/evaluate", json={"lease_id": other}).json() == {"score": -1.0}
        assert http.post(f"{url}/close", json={"lease_id": other}).json() == {"ok": True}
        status = http.get(f"{url}/status").json()
        assert status["browsers"]["crashed"] == 1 and status["in_use"] == 0
        all_pids = set(status["browsers"]["pids"]) | pids_before
    proc.wait(20)
    time.sleep(0.5)
    assert [p for p in all_pids if process_group_alive(p)] == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_pool_page_that_never_loads_is_scored_and_recycled(tmp_path, backend):
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(8)  # accepts connections, never answers
    base = f"http://127.0.0.1:{hang.getsockname()[1]}/miniwob"
    try:
        with _serve(tmp_path, "--max-envs", "1", "--page-load-timeout", "2", env={"MINIWOB_BASE_URL": base, "SCREENSHOT_BACKEND": backend}) as (url, proc), \
                httpx.Client(timeout=60) as http:
            lease = http.post(f"{url}/allocate", json={}).json()["lease_id"]
            t0 = time.monotonic()
            first = http.post(f"{url}/reset", json={"lease_id": lease, "task_config": {"task": "click-button"}}).json()
            assert time.monotonic() - t0 < 15
            assert "did not load within 2 s" in first["info"]["error"] and "did not load" in first["observation"]["text"]
            step = http.post(f"{url}/step", json={"lease_id": lease, "action": "pyautogui.click(5, 5)"}).json()
            assert step["done"] is True
            assert http.post(f"{url}/evaluate", json={"lease_id": lease}).json() == {"score": -1.0}
            pids = http.get(f"{url}/status").json()["browsers"]["pids"]
            http.post(f"{url}/close", json={"lease_id": lease})
            again = http.post(f"{url}/allocate", json={"request_id": "again"})
            assert again.status_code == 200  # the slot came back
            http.post(f"{url}/close", json={"lease_id": again.json()["lease_id"]})
        proc.wait(20)
        time.sleep(0.5)
        assert [p for p in pids if process_group_alive(p)] == []
    finally:
        hang.close()


# -- the text agent's environment and the launch script's checks -------------------------------------
def test_text_env_plays_through_the_computer_tool_and_never_raises_for_bad_calls(monkeypatch):
    from openclaw_rl.agentic.environment import make_env

    monkeypatch.delenv("GUI_ENV_SERVER_URL", raising=False)
    monkeypatch.setenv("GUI_OBSERVATION_TYPE", "a11y_tree")
    env = make_env("gui", "click-button#3", {"task_config": {"task": "click-button", "seed": 3}})
    try:
        first = env.reset()
        assert first["tools"][0]["function"]["name"] == "computer"
        text = first["observation"]
        assert text.startswith("Task: Click on the") and "pyautogui.click(x, y)" in text
        target = quoted(text.splitlines()[0])
        button = find(rows_of(text), tag="button", text=target)
        assert "unknown tool call" in env.exec_tool({"name": "shell", "arguments": {}})
        assert "not valid JSON" in env.exec_tool({"name": "computer", "arguments": "{oops"})
        assert "Action error: " in env.exec_tool({"name": "computer", "arguments": {"action": "pyautogui.click(9999, 1)"}})
        done = env.exec_tool({"name": "computer", "arguments": f'{{"action": "pyautogui.click({button["x"]}, {button["y"]})"}}'})
        assert "The episode is over (score +1)" in done
        assert "episode is over" in env.exec_tool({"name": "computer", "arguments": {"action": "WAIT"}})
        assert env.evaluate() == 1.0
    finally:
        env.close()
    pid = env.session.browser.pid
    assert not process_group_alive(pid)  # no warm slots asked for: the browser is killed on close


def test_launch_script_refuses_other_env_types_and_backends():
    import subprocess
    import sys

    from tests.support.ray_head import job_env

    script = os.path.join(os.path.dirname(__file__), "..", "gui-rl", "run_gui_rl.sh")
    for extra, message in (({"ENV_TYPE": "terminal"}, "ENV_TYPE must be gui"),
                           ({"SCREENSHOT_BACKEND": "firefox"}, "must be playwright or selenium")):
        r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60,
                           env={**job_env(1, 1), "TRAIN_JOB_DRY_RUN": "1", "PYTHON": sys.executable, **extra})
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_step_prm_sees_the_instruction_the_action_history_and_the_next_observation(monkeypatch):
    """The step PRM's input for a GUI episode, built as gui-rl/generate.py builds it (task = the
    first observation, each step = the computer call and what the screen showed next), and the
    deterministic rule judge's verdicts on it: the off-screen click -1, the right click +1."""
    import asyncio
    import json

    from openclaw_rl.agentic.environment import make_env
    from openclaw_rl.agentic.step_prm import ObservationRuleJudge, Step, StepPRM, build_step_messages

    monkeypatch.delenv("GUI_ENV_SERVER_URL", raising=False)
    monkeypatch.setenv("GUI_OBSERVATION_TYPE", "a11y_tree")
    env = make_env("gui", "click-button#7", {"task_config": {"task": "click-button", "seed": 7}})
    try:
        task = env.reset()["observation"]
        button = find(rows_of(task), tag="button", text=quoted(task.splitlines()[0]))
        calls = [{"name": "computer", "arguments": {"action": "pyautogui.click(9999, 5)"}},
                 {"name": "computer", "arguments": {"action": f"pyautogui.click({button['x']}, {button['y']})"}}]
        steps = [Step(action=json.dumps(c), observation=env.exec_tool(c)) for c in calls]
    finally:
        env.close()
    user = build_step_messages(task, steps, 1)[1]["content"]
    assert quoted(task.splitlines()[0]) in user.split("Earlier steps:")[0]         # the instruction
    history, current = user.split("Earlier steps:")[1].split("Current step (2):")
    assert "pyautogui.click(9999, 5)" in history and "outside the screen" in history  # the action history
    assert f"pyautogui.click({button['x']}, {button['y']})" in current
    assert "The episode is over (score +1)" in current                              # the next observation
    scores = asyncio.run(StepPRM(ObservationRuleJudge(), m=1).score_steps(task, steps))
    assert [s.score for s in scores] == [-1.0, 1.0]
