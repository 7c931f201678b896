"""Read-only views of the store for a person (the dashboard, :mod:`openclaw_rl.server.dashboard`):
recent conversations with everything known about each turn, the training steps a run logged,
and what is stored where and how big."""

from __future__ import annotations

import json
from pathlib import Path

from openclaw_rl.capture.feedback import judge_vote

__all__ = ["conversations", "storage", "training_steps"]

#: the per-step metrics the dashboard shows (what a run's metrics.jsonl names them)
STEP_KEYS = ("step", "time", "reward/mean", "train/loss", "loss", "train/approx_kl", "train/kl_loss",
             "weight_version", "gate/passed", "publish/ok", "rollout/samples")


def _last_user(messages: list[dict]) -> str:
    for m in reversed(messages or []):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def conversations(store, limit: int = 20) -> list[dict]:
    """The ``limit`` most recently active sessions, newest first, each with its turns.

    Returns:
        ``[{"session_id", "created_at", "last_activity", "closed", "turns": [{"turn_id", "id"
        (completion id), "index", "type", "status", "user", "reply", "next_state",
        "next_state_role", "weight_version", "trained_step", "judge": {"method", "reward",
        "vote", "hint", "hint_accepted"} | None, "rating", "correction"}]}]``.
    """
    sessions = store.read("SELECT * FROM sessions ORDER BY last_activity DESC LIMIT ?", (int(limit),))
    out = []
    for s in sessions:
        rows = store.read("SELECT t.id, t.turn_uid, t.completion_id, t.turn_index, t.turn_type, t.status, "
                          "t.messages_json, t.response_text, t.next_state, t.next_state_role, t.weight_version, "
                          "t.trained_step, j.method, j.reward, j.trainable, j.details_json, f.rating, f.correction "
                          "FROM turns t LEFT JOIN judgements j ON j.turn_id = t.id LEFT JOIN feedback f "
                          "ON f.turn_id = t.id WHERE t.session_id=? ORDER BY t.turn_index", (s["session_id"],))
        turns = []
        for r in rows:
            judge = None
            if r["method"] is not None:
                details = json.loads(r["details_json"]) if r["details_json"] else {}
                judge = {"method": r["method"], "reward": r["reward"],
                         "vote": judge_vote({"reward": r["reward"], "details": details}),
                         "hint": details.get("hint"), "hint_accepted": details.get("hint_accepted")}
            turns.append({"turn_id": r["turn_uid"], "id": r["completion_id"], "index": r["turn_index"],
                          "type": r["turn_type"], "status": r["status"],
                          "user": _last_user(json.loads(r["messages_json"] or "[]")), "reply": r["response_text"],
                          "next_state": r["next_state"], "next_state_role": r["next_state_role"],
                          "weight_version": r["weight_version"], "trained_step": r["trained_step"], "judge": judge,
                          "rating": r["rating"], "correction": r["correction"]})
        out.append({"session_id": s["session_id"], "created_at": s["created_at"],
                    "last_activity": s["last_activity"], "closed": bool(s["closed"]), "turns": turns})
    return out


def training_steps(metrics_dir: str | Path | None, limit: int = 200) -> dict:
    """The last ``limit`` steps of the newest ``metrics.jsonl`` under ``metrics_dir`` (a run's
    ``--log-dir``; :class:`slime.orchestration.monitor.MetricsLogger` writes ``<log_dir>/<run>/metrics.jsonl``).

    Returns:
        ``{"file": path or None, "steps": [{key: value}]}`` with the keys of :data:`STEP_KEYS`
        and any ``*satisfaction*`` metric; lines that do not parse (one being written) are skipped.
    """
    if not metrics_dir or not Path(metrics_dir).is_dir():
        return {"file": None, "steps": []}
    files = sorted(Path(metrics_dir).glob("*/metrics.jsonl"), key=lambda p: p.stat().st_mtime)
    if not files:
        return {"file": None, "steps": []}
    steps = []
    for line in files[-1].read_text(errors="replace").splitlines()[-limit:]:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        steps.append({k: v for k, v in row.items() if k in STEP_KEYS or "satisfaction" in k})
    return {"file": str(files[-1]), "steps": steps}


def storage(store) -> dict:
    """What is stored where: every file under the buffer folder with its size, and the row count
    of each table. Returns ``{"folder", "files": [{"path", "bytes"}], "tables": {name: rows},
    "total_bytes"}``."""
    folder = Path(store.dir)
    files = [{"path": str(p.relative_to(folder)), "bytes": p.stat().st_size}
             for p in sorted(folder.rglob("*")) if p.is_file()]
    tables = {}
    for name in ("sessions", "turns", "judgements", "feedback", "lessons", "lesson_sources", "weight_versions",
                 "continuations", "forgotten"):
        tables[name] = store.read(f"SELECT COUNT(*) FROM {name}")[0][0]
    return {"folder": str(folder), "files": files, "tables": tables, "total_bytes": sum(f["bytes"] for f in files)}
