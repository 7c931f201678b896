"""The episode's copy-on-write root: host dirs, overlay mounts in a private namespace, bwrap binds.

See :mod:`openclaw_rl.agentic.sandbox` for the whole design. This module owns the files:
``<root>/upper|ovlwork|merged/<d>`` per overlaid host system dir ``<d>``, and ``<root>/rootfs``, the
sandbox's ``/`` (fresh writable /root, /tmp, /home, /workspace and whatever else is made at the
top level, e.g. AgentBench's ``/testfile``, persist there between commands), plus the *holder* process whose private mount namespace carries the
overlay mounts (they vanish with it; the host's mount table never changes) and whose pid
namespace holds every process of the episode (its bash is pid 1: when it exits on close, the
kernel kills whatever is left).
"""

from __future__ import annotations

import os
import posixpath
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openclaw_rl.agentic._cgroup import owner_dead
from openclaw_rl.agentic._output import HeadTail, pump

SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "opt", "var")
FRESH_DIRS = ("root", "tmp", "workspace", "home")
# /proc parts a root process without CAP_SYS_ADMIN could still use on the host (Docker's list):
# read-only (sysctls, /proc/sysrq-trigger that reboots the machine) or masked
PROC_READ_ONLY = ("bus", "fs", "irq", "sys", "sysrq-trigger")
PROC_MASKED_DIRS = ("acpi", "asound", "scsi", "driver")
PROC_MASKED_FILES = ("kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug",
                     "kmsg", "kallsyms", "kpagecgroup", "kpagecount", "kpageflags", "config.gz")
# pid 1 of an episode: says ready, reaps every child until its stdin closes
_REAPER = """
import os, signal, sys
def reap(*_):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
signal.signal(signal.SIGCHLD, reap)
print("ready", flush=True)
while os.read(0, 4096):
    pass
"""
HOST_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
#: signals an episode's processes must see with their default action, whatever the host process
#: had: a server started in the background of a non-interactive shell (``nohup ... &``) inherits
#: SIGINT and SIGQUIT ignored, and an ignored signal stays ignored across exec, so Ctrl-C in the
#: episode's interactive shell would do nothing
DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGQUIT)


def default_signals() -> None:
    """``preexec_fn`` of every process the sandbox starts: :data:`DEFAULT_SIGNALS` to SIG_DFL."""
    for sig in DEFAULT_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def norm(path: str) -> str:
    """Normalised absolute sandbox path. Raises ValueError for a relative one."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"sandbox paths must be absolute, got {path!r}")
    return "/" + posixpath.normpath(path).lstrip("/")


def rmtree(path: Path) -> None:
    """``shutil.rmtree`` that also removes what the sandbox made unreadable (chmod 000 dirs)."""
    def fix(func, p, _exc):
        try:
            os.chmod(posixpath.dirname(p), 0o700)
            os.chmod(p, 0o700)
        except OSError:
            pass
        func(p)

    if path.exists():
        shutil.rmtree(path, onerror=fix)


class EpisodeRoot:
    """The host side of one episode's file system.

    Args:
        workdir: the commands' working dir; its top-level dir becomes a fresh dir if it is
            neither a system dir nor one of :data:`FRESH_DIRS`.

    Attributes:
        root: the episode dir on the host (``$OPENCLAW_RL_SANDBOX_DIR`` or the temp dir).
        overlays: host system dirs mounted copy-on-write; symlinks: (target, link) replicated
            (``/bin -> usr/bin`` on merged-/usr systems); fresh: fresh writable top-level dirs.
    """

    def __init__(self, workdir: str):
        base = os.environ.get("OPENCLAW_RL_SANDBOX_DIR") or tempfile.gettempdir()
        for stale in Path(base).glob("openclaw-sandbox-*"):  # episodes of a crashed process
            if owner_dead(stale.name):
                rmtree(stale)
        self.root = Path(tempfile.mkdtemp(prefix=f"openclaw-sandbox-{os.getpid()}-", dir=base))
        self.holder: subprocess.Popen | None = None
        self.overlays: list[str] = []
        self.symlinks: list[tuple[str, str]] = []
        for name in SYSTEM_DIRS:
            host = Path("/") / name
            if host.is_symlink():
                self.symlinks.append((os.readlink(host), "/" + name))
            elif host.is_dir():
                self.overlays.append(name)
                for part in ("upper", "ovlwork", "merged"):
                    (self.root / part / name).mkdir(parents=True)
        top = workdir.strip("/").split("/")[0]
        self.fresh = list(FRESH_DIRS)
        if top and top not in self.fresh and top not in self.overlays:
            self.fresh.append(top)
        self.rootfs = self.root / "rootfs"
        for name in self.fresh:
            (self.rootfs / name).mkdir(parents=True)
        if top and top not in self.overlays:
            (self.rootfs / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for name in [*self.overlays, "proc", "dev"]:  # mount points
            (self.rootfs / name).mkdir(exist_ok=True)
        for target, link in self.symlinks:  # /bin -> usr/bin, made once (bwrap --symlink would
            os.symlink(target, self.rootfs / link.lstrip("/"))  # refuse the second time)
        (self.rootfs / "tmp").chmod(0o1777)
        (self.rootfs / "root").chmod(0o700)

    def host_path(self, path: str) -> Path:
        """Host location of sandbox ``path`` (valid for writes before the holder starts only).

        Raises:
            ValueError: relative, or outside the overlaid and fresh dirs.
        """
        rel = norm(path).lstrip("/")
        top = rel.split("/")[0]
        if top in self.overlays:
            return self.root / "upper" / rel
        if not rel or top in ("proc", "dev") or any(top == link.strip("/") for _, link in self.symlinks):
            raise ValueError(f"cannot write {path!r} into the sandbox before start")
        return self.rootfs / rel

    def write(self, path: str, content: str | bytes) -> None:
        """Write a file into the episode before start-up (parents made)."""
        host = self.host_path(path)
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_bytes(content.encode() if isinstance(content, str) else content)

    def copy_dir(self, src: str, dst: str) -> None:
        """Copy host dir ``src`` to sandbox path ``dst`` before start-up (symlinks kept as links)."""
        shutil.copytree(src, self.host_path(dst), symlinks=True, dirs_exist_ok=True)

    def start(self, timeout: float = 20.0) -> None:
        """Start the holder: private mount (overlays mounted) and pid namespaces.

        Raises:
            RuntimeError: one-line reason (mount refused, e.g. upper dir on overlayfs).
        """
        lines = ["set -e"]
        for name in self.overlays:
            opts = (f"lowerdir=/{name},upperdir={self.root}/upper/{name},"
                    f"workdir={self.root}/ovlwork/{name}")
            lines.append(f"mount -t overlay overlay -o {shlex.quote(opts)} "
                         f"{shlex.quote(str(self.root / 'merged' / name))}")
        # the episode's pid 1 must reap the orphans it adopts (zombies count against pids.max)
        # (the system python starts faster than a venv's; either will do)
        python = shutil.which("python3", path=HOST_ENV["PATH"]) or sys.executable
        lines.append(f"exec {shlex.quote(python)} -I -S -c {shlex.quote(_REAPER)}")
        self.holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc",
             "/bin/bash", "-c", "\n".join(lines)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, env=HOST_ENV, preexec_fn=default_signals)
        sink = HeadTail(4096)
        pump(self.holder.stdout.fileno(), sink, time.monotonic() + timeout,
             stop=lambda seen: b"ready\n" in seen)
        if b"ready" not in bytes(sink.head):
            self.holder.kill()
            self.holder.wait()
            err = self.holder.stderr.read().decode(errors="replace").strip().splitlines()
            raise RuntimeError("cannot mount the overlay root: " + (err[-1] if err else "holder died")
                               + " (set OPENCLAW_RL_SANDBOX_DIR to a dir on ext4/xfs/tmpfs)")

    def nsenter_args(self) -> list[str]:
        """``nsenter`` options that enter the holder's mount and pid namespaces."""
        pid = self.holder.pid
        return [f"--mount=/proc/{pid}/ns/mnt", f"--pid=/proc/{pid}/ns/pid_for_children"]

    def bwrap_binds(self) -> list[str]:
        """bwrap arguments that build the sandbox's file system from this root."""
        out = ["--bind", str(self.rootfs), "/", "--proc", "/proc", "--dev", "/dev"]
        for name in PROC_READ_ONLY:
            if os.path.exists(f"/proc/{name}"):
                out += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
        for name in PROC_MASKED_DIRS:
            if os.path.isdir(f"/proc/{name}"):
                out += ["--tmpfs", f"/proc/{name}", "--remount-ro", f"/proc/{name}"]
        for name in PROC_MASKED_FILES:
            if os.path.exists(f"/proc/{name}"):
                out += ["--ro-bind", "/dev/null", f"/proc/{name}"]
        for name in self.overlays:
            out += ["--bind", str(self.root / "merged" / name), "/" + name]
        return out

    def remove(self) -> None:
        """Stop the holder (the mounts go with it) and delete the episode dir (idempotent)."""
        if self.holder is not None:
            for stream in (self.holder.stdin, self.holder.stdout, self.holder.stderr):
                try:
                    stream.close()
                except OSError:
                    pass
            try:
                self.holder.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.holder.kill()
                self.holder.wait()
        rmtree(self.root)
