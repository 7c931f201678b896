"""Per-episode sandbox for untrusted commands: bubblewrap over a copy-on-write root (overlayfs).

Layout of one episode (a ``Sandbox``), all under ``$OPENCLAW_RL_SANDBOX_DIR`` (default the system
temp dir), removed by :meth:`Sandbox.close`::

    <episode>/upper/<d>, work/<d>, merged/<d>   one overlayfs per host system dir <d> (usr, etc, opt,
                                                var, and bin/lib/... where they are not symlinks):
                                                the host's dir read-only underneath, writes land
                                                in upper/<d>
    <episode>/rootfs                            the sandbox's / : fresh writable /root, /tmp,
                                                /workspace, /home; anything made at the top level

How it is isolated (bubblewrap 0.8, the Debian 12 package, has no ``--overlay``; so we mount the
overlays ourselves, as root, in a private mount namespace that only the episode sees):

* a *holder* process (``unshare --mount --propagation private --pid --fork``) mounts the
  overlays once at start-up; its pid 1 (a tiny reaper) waits on its stdin and exits when the
  sandbox closes or this process dies; the mounts go with its mount namespace (nothing is ever
  mounted on the host) and the kernel kills every process left in its pid namespace;
* each command enters those namespaces (``nsenter --mount --pid``): one pid namespace per
  episode, so a daemon started by one command (AgentBench's ``start`` scripts, ``cmd &``) is
  seen by the next, as in a container; a command returns when its own process exits (output
  still arriving within 50 ms is kept), its background jobs live on until close;
* it runs under ``bwrap`` with new net (no network: only its own loopback), ipc, uts and cgroup
  namespaces, a fresh /proc and minimal /dev (/proc/sys, /proc/sysrq-trigger and the other
  host-wide /proc parts read-only or masked, as Docker does), ``--die-with-parent``,
  ``--new-session``, a cleared environment, the episode's ``rootfs`` as / and the overlays on
  top: the project checkout (/work), the host's /tmp and every other episode are simply not
  there;
* capabilities are dropped to Docker's default set minus ``MKNOD``/``NET_RAW``/``SETFCAP``/
  ``SYS_CHROOT`` (root inside can still chown, su and edit the overlaid /etc, as AgentBench's
  containers expect), and bwrap sets ``no_new_privs``;
* limits: ``ulimit`` (RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NPROC, no core files) on the
  launcher, inherited by everything it starts; a per-episode ``pids`` cgroup caps the process
  count (RLIMIT_NPROC does not bind root; see ``_cgroup.py``);
* every command gets its own sub-cgroup of the episode's pids cgroup; the wall-clock timeout
  SIGKILLs the launcher's process group and every task of that sub-cgroup (SIGSTOP first, so a
  fork bomb cannot outrun it); without cgroups, ``--die-with-parent`` kills the command's shell.

Requires root (mounting overlayfs), ``bwrap``, and util-linux ``unshare``/``nsenter``; without
them :func:`sandbox_available` says why. If the owning process is killed, its episodes' processes
die with their pid 1 (stdin EOF); the next ``Sandbox`` removes the dirs and cgroups left behind.
"""

from __future__ import annotations

import functools
import os
import resource
import shlex
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from openclaw_rl.agentic._cgroup import PidsCgroup
from openclaw_rl.agentic._episode_root import HOST_ENV as _HOST_ENV
from openclaw_rl.agentic._episode_root import EpisodeRoot, default_signals
from openclaw_rl.agentic._episode_root import norm as _norm
from openclaw_rl.agentic._output import HeadTail, pump
from openclaw_rl.agentic.sandbox_shell import ShellSession

_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
         "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_AUDIT_WRITE")
_LAUNCHER = ('if [ -n "$1" ]; then echo $$ > "$1" || exit 125; fi; shift; '
             'ulimit -t "$1" -v "$2" -f "$3" -u "$4" -c 0 || exit 125; shift 4; exec "$@"')
_RC_MISSING, _RC_ISDIR = 44, 45

__all__ = ["ExecResult", "Sandbox", "SandboxError", "SandboxLimits", "ShellSession",
           "sandbox_available"]


class SandboxError(RuntimeError):
    """The sandbox cannot be set up (bwrap missing, not root, overlay mount refused...)."""


@dataclass(frozen=True)
class SandboxLimits:
    """Per-command resource limits.

    Attributes:
        cpu_seconds: RLIMIT_CPU of every process (seconds of CPU time).
        memory_mb: RLIMIT_AS of every process (MiB of address space).
        max_processes: tasks in the episode's pids cgroup (RLIMIT_NPROC when no cgroup).
        wall_seconds: default wall-clock timeout of one command (seconds).
        output_bytes: bytes of output kept per command (head + tail, marked truncated).
        file_size_mb: RLIMIT_FSIZE (MiB, largest file a process may write).
    """

    cpu_seconds: int = 10
    memory_mb: int = 512
    max_processes: int = 64
    wall_seconds: float = 30.0
    output_bytes: int = 16384
    file_size_mb: int = 64


@dataclass(frozen=True)
class ExecResult:
    """What one command did.

    Attributes:
        returncode: exit status; 124 on wall-clock timeout, 128+signal when killed by a signal.
        output: stdout and stderr interleaved, UTF-8 decoded (errors replaced), head+tail truncated.
        timed_out: the wall-clock timeout fired.
        truncated: bytes were dropped from the middle of the output.
    """

    returncode: int
    output: str
    timed_out: bool
    truncated: bool


def _clamp(which: int, value: int, unit: int = 1) -> str:
    """``value`` (in ``unit`` bytes) capped at the current hard limit: ``ulimit`` cannot raise it."""
    hard = resource.getrlimit(which)[1]
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard // unit)
    return str(value)


class Sandbox:
    """One episode's sandbox (a context manager); :meth:`run` is thread-safe.

    Args:
        files: sandbox absolute path -> content, written before start (e.g. ``"/workspace/x.py"``).
        copy_dirs: host dir -> sandbox path, copied into the episode before start.
        limits: per-command limits.
        workdir: working directory of commands (a fresh dir unless it lies in a system dir).

    Raises:
        SandboxError: one-line reason when the sandbox cannot be set up.
        ValueError: a relative path in ``files``/``copy_dirs``.
    """

    def __init__(self, *, files: dict[str, str | bytes] | None = None,
                 copy_dirs: dict[str, str] | None = None,
                 limits: SandboxLimits = SandboxLimits(), workdir: str = "/workspace"):
        self.limits = limits
        self.workdir = _norm(workdir)
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()
        self._shells: set = set()
        self._closed = False
        self._root: EpisodeRoot | None = None
        self.cgroup: PidsCgroup | None = None
        for tool in ("bwrap", "unshare", "nsenter"):
            if shutil.which(tool, path=_HOST_ENV["PATH"]) is None:
                raise SandboxError(f"`{tool}` not found (install bubblewrap / util-linux: make install)")
        if os.geteuid() != 0:
            raise SandboxError("the sandbox mounts its overlay root itself and needs root (euid 0)")
        self._root = EpisodeRoot(self.workdir)
        try:
            for dst, content in (files or {}).items():
                self._root.write(dst, content)
            for src, dst in (copy_dirs or {}).items():
                self._root.copy_dir(src, dst)
            self.cgroup = PidsCgroup.create(limits.max_processes)
            self._root.start()
        except RuntimeError as exc:
            self.close()
            raise SandboxError(str(exc)) from None
        except BaseException:
            self.close()
            raise

    @property
    def root(self) -> Path:
        """The episode's dir on the host (gone after :meth:`close`)."""
        return self._root.root

    # ---- commands -----------------------------------------------------------------------------
    def _argv(self, argv: list[str], *, env: dict[str, str] | None, cwd: str | None,
              user: str, new_session: bool, procs_file: str | None = None) -> list[str]:
        """The full launcher -> nsenter -> bwrap command line for ``argv`` inside the sandbox."""
        if self._closed or self._root is None or self._root.holder is None:
            raise SandboxError("the sandbox is closed")
        lim = self.limits
        out = ["/bin/bash", "-c", _LAUNCHER, "oc-sandbox",
               procs_file or (self.cgroup.procs_file if self.cgroup else ""),
               _clamp(resource.RLIMIT_CPU, lim.cpu_seconds),
               _clamp(resource.RLIMIT_AS, lim.memory_mb * 1024, 1024),
               _clamp(resource.RLIMIT_FSIZE, lim.file_size_mb * 1024, 1024),
               _clamp(resource.RLIMIT_NPROC, lim.max_processes),
               "nsenter", *self._root.nsenter_args(), "--",
               "bwrap", "--unshare-ipc", "--unshare-net", "--unshare-uts",
               "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent",
               "--cap-drop", "ALL"]
        for cap in _CAPS:
            out += ["--cap-add", cap]
        out += self._root.bwrap_binds()
        home = "/root" if user == "root" else f"/home/{user}"
        full_env = {"PATH": _HOST_ENV["PATH"], "HOME": home, "USER": user, "LOGNAME": user,
                    "LANG": "C.UTF-8", "SHELL": "/bin/bash", "TERM": "dumb", **(env or {})}
        out.append("--clearenv")
        for key, value in full_env.items():
            out += ["--setenv", key, value]
        out += ["--chdir", _norm(cwd) if cwd else self.workdir]
        if new_session:
            out.append("--new-session")
        if user != "root":
            argv = ["runuser", "-u", user, "--", *argv]
        return out + ["--", *argv]

    def _spawn(self, argv: list[str], *, own_session: bool = True, **popen) -> subprocess.Popen:
        """Start ``argv`` (a launcher line) in its own session, or own process group only."""
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            group = {"start_new_session": True} if own_session else {"process_group": 0}
            proc = subprocess.Popen(argv, env=_HOST_ENV, preexec_fn=default_signals, **group, **popen)
            self._procs.add(proc)
        return proc

    def _forget(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._procs.discard(proc)

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _exec(self, command: str, *, timeout: float | None, stdin: bytes | None,
              env: dict[str, str] | None, cwd: str | None, user: str,
              keep: int) -> tuple[int, HeadTail, bool]:
        group = self.cgroup.child() if self.cgroup else None
        argv = self._argv(["/bin/bash", "-c", command], env=env, cwd=cwd, user=user,
                          new_session=True, procs_file=group.procs_file if group else None)
        try:
            proc = self._spawn(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except BaseException:
            if group:
                group.remove()
            raise
        try:
            if stdin is not None:
                threading.Thread(target=self._feed, args=(proc, stdin), daemon=True).start()
            sink = HeadTail(keep)
            wall = self.limits.wall_seconds if timeout is None else float(timeout)
            deadline = time.monotonic() + wall
            why = pump(proc.stdout.fileno(), sink, deadline, done=lambda: proc.poll() is not None)
            timed_out = why == "deadline"
            if not timed_out:
                try:
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
            if timed_out:
                self._kill(proc)
                if group:
                    group.kill_all()
                pump(proc.stdout.fileno(), sink, time.monotonic() + 1.0)
                proc.wait()
            rc = 124 if timed_out else proc.returncode
            return (128 - rc if rc < 0 else rc), sink, timed_out
        finally:
            self._kill(proc)
            if group and not group.pids():  # background jobs keep theirs until close()
                group.remove()
            proc.stdout.close()
            if proc.poll() is None:
                proc.wait()
            self._forget(proc)

    @staticmethod
    def _feed(proc: subprocess.Popen, data: bytes) -> None:
        try:
            proc.stdin.write(data)
        except (BrokenPipeError, OSError, ValueError):
            pass
        finally:
            try:
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

    def run(self, command: str, *, timeout: float | None = None, stdin: str | None = None,
            env: dict[str, str] | None = None, cwd: str | None = None,
            user: str = "root") -> ExecResult:
        """Run ``bash -c command`` in the sandbox.

        Args:
            command: the shell command line.
            timeout: wall-clock seconds (default ``limits.wall_seconds``); on expiry the whole
                process tree is killed and the result has ``returncode`` 124.
            stdin: text fed to the command's stdin (default: none, /dev/null).
            env: extra environment variables (the host environment never enters).
            cwd: working directory inside the sandbox (default ``workdir``).
            user: user to run as (``runuser`` inside; the user must exist in the sandbox).

        Returns:
            An :class:`ExecResult`.

        Raises:
            SandboxError: the sandbox is closed.
        """
        rc, sink, timed_out = self._exec(command, timeout=timeout,
                                         stdin=None if stdin is None else stdin.encode(),
                                         env=env, cwd=cwd, user=user,
                                         keep=self.limits.output_bytes)
        return ExecResult(rc, sink.text(), timed_out, sink.truncated)

    def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        """Write ``content`` to absolute sandbox ``path`` (parents made), through the sandbox.

        Raises:
            OSError: the sandbox refused the write (one-line reason).
        """
        q = shlex.quote(_norm(path))
        data = content.encode() if isinstance(content, str) else bytes(content)
        rc, sink, _ = self._exec(f'mkdir -p -- "$(dirname -- {q})" && cat > {q} && chmod {mode:o} {q}',
                                 timeout=self.limits.wall_seconds, stdin=data, env=None, cwd="/",
                                 user="root", keep=4096)
        if rc != 0:
            raise OSError(f"cannot write {path} in the sandbox: {sink.text().strip()[-300:]}")

    def read_file(self, path: str) -> bytes:
        """Bytes of absolute sandbox ``path`` (at most ``limits.file_size_mb``), read through the sandbox.

        Raises:
            FileNotFoundError: no such file. IsADirectoryError: a directory. OSError: other failure.
        """
        q = shlex.quote(_norm(path))
        cap = self.limits.file_size_mb * 1024 * 1024 + 2
        rc, sink, _ = self._exec(f"[ -e {q} ] || exit {_RC_MISSING}; [ -d {q} ] && exit {_RC_ISDIR}; "
                                 f"exec cat -- {q}", timeout=self.limits.wall_seconds, stdin=None,
                                 env=None, cwd="/", user="root", keep=cap)
        if rc == _RC_MISSING:
            raise FileNotFoundError(path)
        if rc == _RC_ISDIR:
            raise IsADirectoryError(path)
        if rc != 0 or sink.truncated:
            raise OSError(f"cannot read {path} in the sandbox: {sink.text().strip()[-300:]}")
        return bytes(sink.head) + bytes(sink.tail)

    def shell(self) -> ShellSession:
        """A persistent interactive bash in the sandbox (closed with the sandbox)."""
        session = ShellSession(self)
        with self._lock:
            self._shells.add(session)
        return session

    @property
    def limits_note(self) -> str:
        """How the process limit is enforced here (pids cgroup, or RLIMIT_NPROC only)."""
        if self.cgroup:
            return f"pids cgroup v{self.cgroup.version} ({self.cgroup.path})"
        return "RLIMIT_NPROC only (no pids cgroup: not enforced for root)"

    # ---- teardown -----------------------------------------------------------------------------
    def close(self) -> None:
        """Kill everything the sandbox started and remove the episode's dirs (idempotent)."""
        with self._lock:
            self._closed = True
            shells, procs = list(self._shells), list(self._procs)
            self._shells.clear()
        for session in shells:
            session.close()
        for proc in procs:
            self._kill(proc)
        if self.cgroup is not None:
            self.cgroup.remove()
        if self._root is not None:
            self._root.remove()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:
                pass


@functools.lru_cache(maxsize=1)
def sandbox_available() -> tuple[bool, str]:
    """Whether a sandbox can be made here: ``(True, "ok")`` or ``(False, one-line reason)``."""
    try:
        with Sandbox(limits=SandboxLimits(wall_seconds=20)) as box:
            result = box.run("echo ok")
    except (SandboxError, OSError) as exc:
        return False, str(exc)
    if result.returncode != 0 or result.output.strip() != "ok":
        return False, f"a trial command failed: {result.output.strip()[:200]}"
    return True, "ok"
