"""The store's disk filling up and turning read-only under the real server subprocess.

The server runs in a private mount namespace (``unshare -m``) with its ``--rl-buffer-dir`` on a
small tmpfs, so the host's mounts never change. The test reaches that disk through
``/proc/<pid>/root`` and ``nsenter -t <pid> -m``: a ballast file fills it (SQLite: ``database or
disk is full``), then it is remounted read-only, then it recovers (remounted read-write, ballast
removed). Meanwhile clients get normal replies, each lost turn counts on
``openclaw_capture_failures_total``, the log says so once (not once per request), what was
recorded before stays intact (``PRAGMA integrity_check``, every earlier row equal), and new turns
are recorded again without a restart.

The kernel refuses a read-only remount while a process holds files open for writing on it; the
server drops its SQLite connection after a failed write, so after the disk-full phase nothing
holds the files and the remount goes through (it is retried after another failing request if the
idle sweeper happened to reopen the connection meanwhile).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.server import start_server, stop_server

MODEL = "builtin:tiny-qwen3"
AUTH = {"Authorization": "Bearer sk-test"}

pytestmark = pytest.mark.skipif(shutil.which("unshare") is None or shutil.which("nsenter") is None,
                                reason="needs unshare and nsenter (util-linux) and root")


def _chat(server, session: str, text: str) -> httpx.Response:
    r = httpx.post(server.base_url + "/chat/completions", headers={**AUTH, "X-Session-Id": session}, timeout=300,
                   json={"messages": [{"role": "user", "content": text}], "max_tokens": 3, "seed": 1})
    assert r.status_code == 200, r.text  # serving goes on whatever the disk does
    assert r.json()["choices"][0]["finish_reason"] in ("length", "stop")
    return r


def _failures(root: str, stage: str, error: str = "") -> float:
    """``openclaw_capture_failures_total`` of ``stage``, summed over the error labels that start
    with ``error``."""
    total = 0.0
    for line in httpx.get(f"{root}/metrics", timeout=10).text.splitlines():
        if (line.startswith("openclaw_capture_failures_total{") and f'stage="{stage}"' in line
                and f'error="{error}' in line):
            total += float(line.split()[-1])
    return total


_DUMP = """
import json, sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
ok = db.execute("PRAGMA integrity_check").fetchone()[0]
rows = db.execute("SELECT id, session_id, turn_index, status, prompt_ids, response_ids, "
                  "response_logprobs, next_state FROM turns ORDER BY id").fetchall()
print(json.dumps([ok, rows]))
"""


def _rows(pid: int, db_path: Path) -> list[list]:
    """Integrity check and every turn row, read inside the server's mount namespace (SQLite
    resolves links in its paths, so the process's root link under ``/proc/<pid>`` would lead it to
    the host's disk)."""
    proc = subprocess.run(["nsenter", "-t", str(pid), "-m", sys.executable, "-c", _DUMP, str(db_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ok, rows = json.loads(proc.stdout)
    assert ok == "ok"
    return rows


def _fill(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def _mount(pid: int, buf: Path, mode: str) -> bool:
    proc = subprocess.run(["nsenter", "-t", str(pid), "-m", "mount", "-o", f"remount,{mode}", str(buf)],
                          capture_output=True, text=True)
    return proc.returncode == 0


def test_full_then_read_only_disk_keeps_serving_counts_and_recovers(tmp_path):
    buf = tmp_path / "rl_buffer"
    buf.mkdir()
    prefix = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=4m tmpfs "$0" && exec "$@"', str(buf)]
    server = start_server(MODEL, buf, "--session-idle-timeout", "3600", command_prefix=prefix)
    try:
        root, pid = server.base_url.replace("/v1", ""), server.proc.pid
        disk = Path(f"/proc/{pid}/root{buf}")  # the server's tmpfs, seen from here
        assert not (buf / "trajectories.sqlite").exists() and (disk / "trajectories.sqlite").exists()
        _chat(server, "before", "first")
        _chat(server, "before-2", "second")
        before = _rows(pid, buf / "trajectories.sqlite")
        assert [r[1] for r in before] == ["before", "before-2"]

        # the disk fills up
        _fill(disk / "ballast")
        t_first = time.time()
        for i in range(3):
            _chat(server, f"full-{i}", "while the disk is full")
        assert _failures(root, "record") == _failures(root, "record", "SQLITE_FULL") == 3.0
        # it turns read-only (retried: the sweeper may hold the connection open for a moment)
        for _ in range(5):
            if _mount(pid, buf, "ro"):
                break
            _chat(server, "full-again", "while the disk is full")
        else:
            raise AssertionError("could not remount the buffer read-only")
        with pytest.raises(OSError) as info:
            (disk / "probe").write_text("x")
        assert info.value.errno == errno.EROFS
        full = _failures(root, "record")
        for i in range(2):
            _chat(server, f"ro-{i}", "while the disk is read-only")
        elapsed = time.time() - t_first
        assert _failures(root, "record") == full + 2
        assert _failures(root, "record", "SQLITE_READONLY") + _failures(root, "record", "SQLITE_IOERR") == 2
        log = server.log()
        failure_lines = [x for x in log.splitlines() if "capture failed" in x]
        # logged at most once a minute, never once per request
        assert 1 <= len(failure_lines) <= 1 + elapsed // 60 and len(failure_lines) < full + 2, failure_lines
        assert "SQLITE_FULL" in failure_lines[0] or "ENOSPC" in failure_lines[0]

        # the disk recovers: capture resumes by itself, nothing recorded before was damaged
        assert _mount(pid, buf, "rw")
        (disk / "ballast").unlink()
        lost = _failures(root, "record")
        _chat(server, "after", "the disk is back")
        _chat(server, "after-2", "and again")
        assert _failures(root, "record") == lost
        after = _rows(pid, buf / "trajectories.sqlite")
        assert after[:2] == before
        assert [r[1] for r in after] == ["before", "before-2", "after", "after-2"]
        assert "capture recovered" in server.log()
        stop_server(server)
        assert server.proc.returncode == 0
    finally:
        stop_server(server)


def test_capture_failures_are_logged_once_per_interval(monkeypatch, caplog):
    import sqlite3 as sq

    from openclaw_rl.capture import failures as mod

    clock = [1000.0]
    monkeypatch.setattr(mod.time, "monotonic", lambda: clock[0])
    f = mod.CaptureFailures(log_interval=60)
    exc = sq.OperationalError("database or disk is full")
    exc.sqlite_errorname = "SQLITE_FULL"
    with caplog.at_level("WARNING", logger=mod.__name__):
        for _ in range(5):
            f.failed("record", exc)
            clock[0] += 10
        clock[0] += 20  # 70 s after the first line
        f.failed("record", OSError(30, "Read-only file system"))
        f.succeeded()
        f.succeeded()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and f.total == 6
    assert "SQLITE_FULL in record" in lines[0] and "1 capture failure(s) since" in lines[0]
    assert "EROFS in record" in lines[1] and "5 capture failure(s) since" in lines[1]
    assert lines[2].startswith("capture recovered")
