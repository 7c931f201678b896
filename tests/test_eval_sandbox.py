"""The HumanEval sandbox: real subprocesses, real resource limits, real files."""

from __future__ import annotations

import time

from openclaw_rl.evaluation.data import humaneval
from openclaw_rl.evaluation.sandbox import run_python
from openclaw_rl.evaluation.tasks.coding import build_program, extract_code


def _problem(i: int = 0) -> dict:
    return humaneval()[i]


def test_canonical_solution_passes_and_wrong_one_fails():
    p = _problem(0)
    assert run_python(build_program(p, p["canonical_solution"])).passed
    wrong = run_python(build_program(p, "    return True\n"))
    assert not wrong.passed and wrong.status.startswith("failed: AssertionError")


def test_whole_function_reply_replaces_the_stub():
    p = _problem(2)  # truncate_number
    reply = "Here you go:\n```python\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n```\nDone."
    code = extract_code(reply, p["entry_point"])
    assert code.startswith("def truncate_number")
    assert run_python(build_program(p, code)).passed


def test_infinite_loop_is_stopped():
    t0 = time.monotonic()
    r = run_python("while True:\n    pass\n", timeout=1.0)
    assert not r.passed and r.status == "timed out"
    assert time.monotonic() - t0 < 30


def test_sleeping_forever_is_stopped_by_the_wall_clock():
    r = run_python("import time\ntime.sleep(3600)\n", timeout=1.0, wall_timeout=1.5)
    assert not r.passed and r.status == "timed out" and r.wall_s < 10


def test_writing_outside_the_temp_dir_is_refused(tmp_path):
    target = tmp_path / "escaped.txt"
    for program in (f"open({str(target)!r}, 'w').write('x')",
                    f"import pathlib; pathlib.Path({str(target)!r}).write_text('x')",
                    f"import os; os.open({str(target)!r}, os.O_CREAT | os.O_WRONLY)",
                    f"import shutil; shutil.rmtree({str(tmp_path)!r})",
                    "open('../escaped.txt', 'w').write('x')"):
        r = run_python(program)
        assert not r.passed and "PermissionError" in r.status, (program, r)
    assert not target.exists() and tmp_path.is_dir()


def test_writing_inside_the_temp_dir_is_allowed():
    r = run_python("open('scratch.txt', 'w').write('hi')\nassert open('scratch.txt').read() == 'hi'\n")
    assert r.passed, r.status


def test_processes_and_sockets_are_refused(tmp_path):
    marker = tmp_path / "ran"
    for program in (f"import os; os.system('touch {marker}')",
                    f"import subprocess; subprocess.run(['touch', {str(marker)!r}])",
                    "import socket; socket.socket()"):
        r = run_python(program)
        assert not r.passed and "PermissionError" in r.status, (program, r)
    assert not marker.exists()


def test_memory_limit():
    r = run_python("x = bytearray(4 << 30)\n", memory_mb=256)
    assert not r.passed and "MemoryError" in r.status


def test_faking_a_pass_does_not_pass():
    assert not run_python("print('passed')\nimport os\nos._exit(0)\n").passed
    assert not run_python("raise SystemExit(0)\n").passed
