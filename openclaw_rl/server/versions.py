"""The weight versions a server has served, and rollback to one of them.

Every version the server swaps in (``POST /admin/update_weights_from_disk``) is recorded with the
folder it came from, when it was served and the promotion gate's metrics the trainer sent with it
(:mod:`slime.guards.promotion`); version 0 is the model the server started with. With capture on the
list lives in the store (table ``weight_versions``, so it survives a restart); without capture,
in memory.

``GET /admin/versions`` lists them (newest first) with which turns were sampled by and trained
into each; ``POST /admin/rollback {"version": V}`` loads V's folder again and serves it as
version V (the engine's version goes down only here), and marks the newer versions
``rolled_back``. A trainer that sees the served version go down restores V's checkpoint and trains
on from V (:meth:`slime.orchestration.publish.Publisher.before_step`). ``openclaw-rl rollback --to V`` is the
same from the command line (:mod:`openclaw_rl.server.rollback_cli`).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["VersionInfo", "VersionRegistry"]


@dataclass
class VersionInfo:
    """One served version.

    Attributes:
        version: the weight version. model_path: the folder it was loaded from (the base model's
        for version 0). served_at: UNIX time it was first served. gate: the promotion gate's
        metrics (``gate/*``), empty when none were sent. status: ``served`` (the one serving now),
        ``superseded`` (a newer one followed), ``rolled_back`` (serving went back past it).
    """

    version: int
    model_path: str
    served_at: float
    gate: dict[str, Any] = field(default_factory=dict)
    status: str = "served"


class VersionRegistry:
    """The served versions (see the module docstring).

    Args:
        store: a :class:`openclaw_rl.capture.store.TrajectoryStore` to persist them in, or None.
    """

    def __init__(self, store=None):
        self.store = store
        self._lock = threading.Lock()
        self._memory: dict[int, VersionInfo] = {}
        self.serving: VersionInfo | None = None  # in memory: /metrics reads it without touching the store

    def record(self, version: int, model_path: str, gate: dict | None = None) -> VersionInfo:
        """``version`` is served now (earlier ``served`` ones become ``superseded``); returns it."""
        info = VersionInfo(int(version), str(model_path), time.time(), dict(gate or {}))
        with self._lock:
            if self.store is not None:
                self.store.record_version(info.version, info.model_path, json.dumps(info.gate), info.served_at)
            else:
                for v in self._memory.values():
                    if v.status == "served":
                        v.status = "superseded"
                self._memory[info.version] = info
            self.serving = info
        return info

    def get(self, version: int) -> VersionInfo | None:
        """The recorded version, or None."""
        return next((v for v in self.list() if v.version == int(version)), None)

    def list(self) -> list[VersionInfo]:
        """Every recorded version, newest first."""
        with self._lock:
            if self.store is not None:
                return [VersionInfo(r["version"], r["model_path"], r["served_at"],
                                    json.loads(r["gate_json"] or "{}"), r["status"])
                        for r in self.store.versions()]
            return sorted(self._memory.values(), key=lambda v: -v.version)

    def rolled_back_to(self, version: int) -> None:
        """Serving went back to ``version``: it is ``served``, newer ones ``rolled_back``."""
        with self._lock:
            if self.store is not None:
                self.store.roll_back_versions(int(version))
            else:
                for v in self._memory.values():
                    v.status = "served" if v.version == version else ("rolled_back" if v.version > version
                                                                       else "superseded")
        self.serving = self.get(version)

    @staticmethod
    def to_json(info: VersionInfo, turns: dict[str, int] | None = None) -> dict[str, Any]:
        """The JSON of one version for ``GET /admin/versions`` (``turns``: counts of turns it
        sampled and trained, when known)."""
        out = asdict(info)
        if turns is not None:
            out.update(turns)
        return out
