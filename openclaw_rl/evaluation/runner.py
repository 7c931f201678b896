"""Run a task's items against a served model: bounded concurrency, a progress bar, resumable.

Every finished item is appended to a JSON Lines log (``<out>/items/<model>/<task>.jsonl``) and
fsync'ed before it counts, so an interrupted run (Ctrl-C, a crash, ``kill -9``) resumes where it
stopped: items already in the log are not asked again, and a half-written last line is dropped.
Beside the log, ``<task>.meta.json`` holds the settings the items were produced with; a resume
with different settings is refused rather than mixing results.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path

from slime.errors import error_line


class ResumeMismatchError(ValueError):
    """The output folder holds items produced with other settings (use another ``--out`` or ``--fresh``)."""


class ItemLog:
    """Append-only, crash-safe log of finished items for one (model, task).

    Args:
        path: the ``.jsonl`` file (created with its folder).
        settings: JSON-safe dict that must equal the recorded one to resume.
        fresh: discard what is recorded.

    Raises:
        ResumeMismatchError: recorded settings differ from ``settings``.
    """

    def __init__(self, path: str | os.PathLike, settings: dict, *, fresh: bool = False):
        self.path = Path(path)
        self.meta_path = self.path.with_suffix(".meta.json")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        if fresh:
            for p in (self.path, self.meta_path):
                p.unlink(missing_ok=True)
        settings = json.loads(json.dumps(settings))
        meta = json.loads(self.meta_path.read_text()) if self.meta_path.is_file() else None
        if meta is not None and meta["settings"] != settings and self.path.is_file() and self.path.stat().st_size:
            changed = sorted(k for k in set(meta["settings"]) | set(settings)
                             if meta["settings"].get(k) != settings.get(k))
            raise ResumeMismatchError(f"{self.path} holds results made with other settings ({', '.join(changed)}); "
                                      "use another --out or pass --fresh")
        self.wall_s = float(meta.get("wall_s", 0.0)) if meta and meta["settings"] == settings else 0.0
        self.settings = settings
        self._drop_partial_line()
        self._write_meta()

    def _drop_partial_line(self) -> None:
        if not self.path.is_file():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(self.path, "r+b") as fh:
                fh.truncate(data.rfind(b"\n") + 1)

    def _write_meta(self) -> None:
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"settings": self.settings, "wall_s": round(self.wall_s, 3)}, indent=1))
        os.replace(tmp, self.meta_path)

    def done(self) -> dict[str, dict]:
        """Recorded items by id (a later record of an id wins; unreadable lines are skipped)."""
        out: dict[str, dict] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                    out[rec["id"]] = rec
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
        return out

    def append(self, record: dict) -> None:
        """Append one finished item durably (write, flush, fsync), thread-safe."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def add_wall(self, seconds: float) -> None:
        """Add ``seconds`` of evaluation time to the recorded total (kept across resumes)."""
        with self._lock:
            self.wall_s += seconds
            self._write_meta()


def _is_item_error(exc: BaseException) -> bool:
    """Errors that belong to one item (recorded) rather than to the run (raised, resumable)."""
    import openai

    from openclaw_rl.personas import RatingError

    if isinstance(exc, RatingError):
        return True
    return (isinstance(exc, openai.APIStatusError) and 400 <= exc.status_code < 500
            and exc.status_code not in (401, 403, 404, 429))


def run_items(task, client, log: ItemLog, *, limit: int | None = None, concurrency: int = 4,
              progress: bool = True, desc: str = "") -> list[dict]:
    """Score the first ``limit`` items of ``task`` that ``log`` does not hold yet, then return all of them.

    Args:
        task: a :class:`~openclaw_rl.evaluation.tasks.base.Task`.
        client: an :class:`~openclaw_rl.evaluation.client.EvalClient`.
        log: where finished items go (and come from, on resume).
        limit: evaluate the first ``limit`` items (None: all).
        concurrency: requests in flight at once (at least 1).
        progress: show a tqdm bar on stderr.

    Returns:
        The records of the selected items, in task order: ``{"id", "group", "score", "error",
        "detail", "wall_s"}`` (``score`` is None when ``error`` is set).

    Raises:
        Whatever a request raised that is not an item error (connection lost, 5xx, auth): the run
        stops, finished items stay logged, and running it again resumes.
    """
    from tqdm import tqdm

    items = task.items()[: limit if limit is not None else None]
    done = log.done()
    todo = [it for it in items if it["id"] not in done]
    bar = tqdm(total=len(items), initial=len(items) - len(todo), desc=desc or task.name, unit="item",
               disable=not progress, dynamic_ncols=True, leave=True)
    t_run = time.monotonic()

    def one(item: dict) -> dict:
        t0 = time.monotonic()
        try:
            out = task.run(item, client)
            rec = {"id": item["id"], "group": item["group"], "score": out["score"], "error": None,
                   "detail": out.get("detail", {})}
        except Exception as exc:  # noqa: BLE001 - sorted into item errors and run errors below
            if not _is_item_error(exc):
                raise
            rec = {"id": item["id"], "group": item["group"], "score": None,
                   "error": error_line(exc), "detail": {}}
        rec["wall_s"] = round(time.monotonic() - t0, 3)
        log.append(rec)
        bar.update(1)
        return rec

    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix=f"eval-{task.name}")
    try:
        futures = [pool.submit(one, it) for it in todo]
        finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for f in finished:
            if f.exception() is not None:
                raise f.exception()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        bar.close()
        log.add_wall(time.monotonic() - t_run)
    done = log.done()
    return [done[it["id"]] for it in items]
