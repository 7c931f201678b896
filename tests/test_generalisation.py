"""The independent generalisation check (openclaw_rl/main_job/generalisation.py): its conditions,
its questions, and one real check of a served model."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from openclaw_rl.main_job.generalisation import CONDITIONS, EVERYDAY, _table, check, conditions
from openclaw_rl.main_job.heldout import user_message
from openclaw_rl.main_job.questions import question_sets
from openclaw_rl.preferences import PREFERENCES, get_preference
from tests.support.processes import descendants, kill_left_over, still_running


def test_every_preference_has_a_paraphrase_unlike_its_instruction():
    for pref in PREFERENCES.values():
        assert pref.paraphrase and pref.paraphrase != pref.instruction, pref.name


def test_the_conditions_ask_as_stated_paraphrased_and_not_at_all():
    pref = get_preference("name-alex")
    by = conditions(pref)
    assert tuple(by) == CONDITIONS
    q = EVERYDAY[0]
    assert user_message(q, by["stated"]).endswith(pref.instruction)
    assert user_message(q, by["paraphrased"]).endswith(pref.paraphrase)
    assert user_message(q, by["not_stated"]) == q.text
    assert all(by[c].satisfied("Sure, Alex: blot it with cold water first.") for c in CONDITIONS)


def test_the_everyday_questions_are_none_of_the_main_jobs():
    train, held = question_sets(65)
    theirs = {q.text for q in train + held}
    assert len(EVERYDAY) == 40 and len({q.text for q in EVERYDAY}) == 40
    assert not theirs & {q.text for q in EVERYDAY}


def test_a_check_of_a_served_model(tmp_path):
    result = check("builtin:tiny-qwen3", get_preference("name-alex"), max_tokens=4, questions=EVERYDAY[:3],
                   workdir=tmp_path)
    assert set(result) == set(CONDITIONS)
    for r in result.values():
        assert set(r["replies"]) == {q.id for q in EVERYDAY[:3]} and 0.0 <= r["rate"] <= 1.0
        assert r["quality"]["n"] == 3 and 0.0 <= r["quality"]["cut_off"]["rate"] <= 1.0
    lines = _table({"tiny": result})  # a header and a row per condition, the cut-off rate last
    assert len(lines) == 1 + len(CONDITIONS) and lines[0].split()[-1] == "cut"
    assert [float(line.split()[-1]) for line in lines[1:]] == [round(r["quality"]["cut_off"]["rate"], 3)
                                                          for r in result.values()]


def test_a_missing_checkpoint_is_a_one_line_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "openclaw_rl.main_job.generalisation", "--checkpoint",
                        str(tmp_path / "nope")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "does not exist" in r.stderr.strip().splitlines()[-1]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def test_sigterm_stops_the_server_the_check_started(tmp_path):
    """``kill <pid>`` while the check serves a model: exit 143 with one line, and its server is
    stopped, not left running (before, Python's default SIGTERM ended the check at once)."""
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_rl.main_job.generalisation", "--checkpoint", str(tmp_path),
                             "--base-model", "builtin:tiny-qwen3", "--out", str(tmp_path / "g.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started: list[int] = []
    try:
        deadline = time.time() + 300
        while not (started := [p for p in descendants(proc.pid) if b"openclaw_rl.server" in _cmdline(p)]):
            assert proc.poll() is None and time.time() < deadline, proc.stderr.read()[-2000:]
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143 and err.strip().splitlines()[-1] == (
            "generalisation: terminated: stopped the server it started"), err[-2000:]
        assert still_running(started) == [], "the server outlived the check"
    finally:  # whatever is left, by pid
        kill_left_over(proc, started)
