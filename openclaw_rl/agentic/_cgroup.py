"""A per-episode ``pids`` cgroup: the sandbox's process limit and its kill-everything switch.

``RLIMIT_NPROC`` is not enforced for the host's root user (the kernel exempts ``INIT_USER``), and
the sandbox runs commands as root (as AgentBench's Docker containers do), so the process limit
comes from a pids cgroup when one can be created: cgroup v1 with the ``pids`` controller mounted,
or cgroup v2 with ``pids`` enabled for our group's children. Without one, the sandbox falls back
to ``RLIMIT_NPROC`` (effective for non-root users only) and says so in ``Sandbox.limits_note``.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every mount in /proc/self/mountinfo."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        opts = set(rfields[2].split(",")) | set(fields[5].split(",") if len(fields) > 5 else [])
        out.append((fields[4].replace("\\040", " "), rfields[0], opts))
    return out


def owner_dead(name: str) -> bool:
    """Whether ``openclaw-sandbox-<pid>-...`` names a pid that no longer runs (a crashed owner)."""
    parts = name.split("-")
    if len(parts) < 4 or not parts[2].isdigit():
        return False
    try:
        os.kill(int(parts[2]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _own_group(controller: str | None) -> str | None:
    """Our cgroup path for ``controller`` (v1) or the unified path (``None``), from /proc/self/cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if (controller is None and ctrls == "") or (controller and controller in ctrls.split(",")):
            return path
    return None


class PidsCgroup:
    """One cgroup that caps the number of tasks of an episode and can kill all of them.

    Args:
        path: the cgroup directory (created by :meth:`create`).
        version: 1 or 2.
    """

    def __init__(self, path: Path, version: int):
        self.path = path
        self.version = version

    @property
    def procs_file(self) -> str:
        """The ``cgroup.procs`` file a process writes its pid into to join the group."""
        return str(self.path / "cgroup.procs")

    @classmethod
    def create(cls, max_pids: int) -> "PidsCgroup | None":
        """Make a fresh pids cgroup limited to ``max_pids`` tasks; ``None`` when none can be made."""
        name = f"openclaw-sandbox-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        mounts = _mounts()
        for mnt, fstype, opts in mounts:
            if fstype == "cgroup" and "pids" in opts:
                own = _own_group("pids")
                if own is None:
                    continue
                group = Path(mnt) / own.lstrip("/") / name
                made = cls._make(group, max_pids, 1)
                if made:
                    return made
        for mnt, fstype, _ in mounts:
            if fstype == "cgroup2":
                own = _own_group(None)
                if own is None:
                    continue
                parent = Path(mnt) / own.lstrip("/")
                try:
                    enabled = (parent / "cgroup.subtree_control").read_text().split()
                    if "pids" not in enabled:
                        (parent / "cgroup.subtree_control").write_text("+pids")
                except OSError:
                    continue
                made = cls._make(parent / name, max_pids, 2)
                if made:
                    return made
        return None

    @classmethod
    def _make(cls, group: Path, max_pids: int, version: int) -> "PidsCgroup | None":
        for stale in group.parent.glob("openclaw-sandbox-*"):  # left by a process that crashed
            if owner_dead(stale.name):
                cls(stale, version).remove()
        try:
            group.mkdir()
        except OSError:
            return None
        try:
            (group / "pids.max").write_text(str(max_pids))
        except OSError:
            try:
                group.rmdir()
            except OSError:
                pass
            return None
        return cls(group, version)

    def child(self) -> "PidsCgroup | None":
        """A sub-group (one per command) under this group's limit; ``None`` if it cannot be made."""
        path = self.path / f"cmd-{uuid.uuid4().hex[:10]}"
        try:
            path.mkdir()
        except OSError:
            return None
        return PidsCgroup(path, self.version)

    def pids(self) -> list[int]:
        """The pids now in the group and its sub-groups (empty once it is gone)."""
        out = []
        for procs in [Path(self.procs_file), *self.path.glob("*/cgroup.procs")]:
            try:
                out += [int(p) for p in procs.read_text().split()]
            except OSError:
                pass
        return out

    def kill_all(self, timeout: float = 5.0) -> bool:
        """SIGKILL every task in the group until it is empty; returns whether it emptied in time."""
        kill_file = self.path / "cgroup.kill"
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids()
            if not pids:
                return True
            if time.monotonic() > deadline:
                return False
            if self.version == 2 and kill_file.exists():
                try:
                    kill_file.write_text("1")
                except OSError:
                    pass
            # SIGSTOP first until no new task appears (a stopped fork bomb cannot refill the
            # group faster than it is killed), then SIGKILL them all
            stopped: set[int] = set()
            while set(pids) - stopped and time.monotonic() < deadline:
                for pid in set(pids) - stopped:
                    try:
                        os.kill(pid, signal.SIGSTOP)
                    except ProcessLookupError:
                        pass
                    stopped.add(pid)
                pids = self.pids()
            for pid in stopped | set(pids):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and remove the group directory and its sub-groups (idempotent)."""
        self.kill_all()
        for path in [*self.path.glob("*/"), self.path]:
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
