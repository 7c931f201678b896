"""``openclaw-rl forget`` and ``openclaw-rl lessons``: forgetting conversations and managing lessons
from the command line.

Both work on a running server (``--url``: ``POST /admin/forget``, ``/admin/lessons``;
:mod:`openclaw_rl.server.control`) or, with ``--rl-buffer-dir``, directly on a trajectory store no
server is using. ``--rollback`` needs the server (it serves the last version trained before the
forgotten turns again; the trainer follows, :mod:`openclaw_rl.server.versions`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from openclaw_rl.capture.forget import ForgetReport, forget, parse_before, select_sessions
from openclaw_rl.capture.lessons import LessonBook
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.server.rollback_cli import add_server_flags, admin_call

__all__ = ["forget_main", "lessons_main"]


def _where(p: argparse.ArgumentParser) -> None:
    add_server_flags(p)
    p.add_argument("--rl-buffer-dir", default=None,
                   help="work on this trajectory store directly (no server may be using it) instead of --url")


def _store(path: str) -> TrajectoryStore:
    if not (Path(path) / TrajectoryStore.FILENAME).is_file():
        raise ValueError(f"no trajectory store in {path!r}")
    return TrajectoryStore(path)


def forget_main(argv: list[str]) -> int:
    """``openclaw-rl forget --session ID | --before DATE | --all [--rollback]``; prints the report
    (``--json``: as JSON); returns 0.

    Raises:
        ValueError / LookupError: bad flags, an unknown session, an unreachable server or its
            refusal (one line).
    """
    p = argparse.ArgumentParser(prog="openclaw-rl forget",
                                description="Delete conversations from the trajectory store and its folder, and "
                                            "report which weight versions were trained on them.")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", metavar="ID", help="one session (its id as recorded)")
    which.add_argument("--before", metavar="DATE", help="every session started before this ISO date (UTC)")
    which.add_argument("--all", action="store_true", help="every session")
    p.add_argument("--rollback", action="store_true",
                   help="serve (and train on from) the last version trained before them again (needs --url)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _where(p)
    p.add_argument("--run-log-dir", action="append", default=[], metavar="DIR",
                   help="with --rl-buffer-dir: a folder of the run's log files (repeatable) whose *.log, *.out, "
                        "*.err, *.txt and *.jsonl files lose the conversations' lines too (a server scrubs its "
                        "own --run-log-dir)")
    a = p.parse_args(argv)
    before = parse_before(a.before) if a.before else None
    if a.run_log_dir and not a.rl_buffer_dir:
        raise ValueError("--run-log-dir goes with --rl-buffer-dir (a server scrubs the log folders it was given)")
    if a.rl_buffer_dir:
        if a.rollback:
            raise ValueError("--rollback needs the server (--url), not --rl-buffer-dir")
        store = _store(a.rl_buffer_dir)
        try:
            report = forget(store, select_sessions(store, a.session, before, a.all), a.run_log_dir)
        finally:
            store.close()
        out = report.to_json()
    else:
        body = {"session_id": a.session, "all": a.all, "rollback": a.rollback}
        if a.before:
            body["before"] = a.before
        out = admin_call("POST", a.url.rstrip("/") + "/admin/forget", a.admin_api_key, body)
        report = ForgetReport(**{k: v for k, v in out.items() if k != "object"})
    print(json.dumps(out, indent=1) if a.json else "\n".join(report.lines()))
    return 0


def lessons_main(argv: list[str]) -> int:
    """``openclaw-rl lessons [list | edit ID TEXT | delete ID]``; returns 0.

    Raises:
        ValueError / LookupError: bad flags, an unknown lesson, an unreachable server (one line).
    """
    p = argparse.ArgumentParser(prog="openclaw-rl lessons", description="List, edit or delete lessons (accepted "
                                "hindsight hints, de-duplicated).")
    p.add_argument("action", nargs="?", default="list", choices=("list", "edit", "delete"))
    p.add_argument("id", nargs="?", type=int, help="the lesson (edit, delete)")
    p.add_argument("text", nargs="?", help="the new text (edit)")
    p.add_argument("--json", action="store_true")
    _where(p)
    a = p.parse_args(argv)
    if a.action != "list" and a.id is None:
        raise ValueError(f"lessons {a.action} needs the lesson's id")
    if a.action == "edit" and not a.text:
        raise ValueError("lessons edit needs the new text")
    if a.rl_buffer_dir:
        store = _store(a.rl_buffer_dir)
        try:
            book = LessonBook(store)
            if a.action == "edit":
                book.edit(a.id, a.text)
            elif a.action == "delete":
                book.delete(a.id)
            lessons = [x.to_json() for x in book.list()]
        finally:
            store.close()
    else:
        url = a.url.rstrip("/") + "/admin/lessons"
        if a.action == "edit":
            admin_call("PATCH", f"{url}/{a.id}", a.admin_api_key, {"text": a.text})
        elif a.action == "delete":
            admin_call("DELETE", f"{url}/{a.id}", a.admin_api_key)
        lessons = admin_call("GET", url, a.admin_api_key)["data"]
    if a.json:
        print(json.dumps(lessons, indent=1))
        return 0
    if a.action != "list":
        print(f"lesson {a.id} {'edited' if a.action == 'edit' else 'deleted'}", file=sys.stderr)
    for x in lessons:
        print(f"{x['id']:>5}  {x['sources']:>3} turn(s)  {x['text']}")
    return 0
