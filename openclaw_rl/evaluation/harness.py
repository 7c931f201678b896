"""The evaluation run: every model, every task, one server per model; results and report.

For each model (``--model-path`` values, then ``--server-url`` values) a server is started (or the
given one used), each task's items are scored through it by :func:`~openclaw_rl.evaluation.runner.run_items`
(resumable per model and task), scores are summarized with 95% intervals, and the report is
written after every task, so partial results are there even if a later task fails.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from openclaw_rl.evaluation.client import EvalClient
from openclaw_rl.evaluation.data import DataNotInstalledError
from openclaw_rl.evaluation.report import markdown_table, write_report
from openclaw_rl.evaluation.runner import ItemLog, run_items
from openclaw_rl.evaluation.stats import paired_delta, summarize
from openclaw_rl.evaluation.targets import Target, resolve_target, server_target, serving, unique_keys
from openclaw_rl.evaluation.tasks import DEFAULT_TASKS, make_task


@dataclass
class EvalConfig:
    """Settings of one evaluation run (see ``openclaw-rl eval -h`` for each)."""

    model_paths: list[str] = field(default_factory=list)
    server_urls: list[str] = field(default_factory=list)
    api_key: str | None = None
    tasks: list[str] = field(default_factory=lambda: list(DEFAULT_TASKS))
    limit: int | None = None
    out: str = "outputs/eval"
    seed: int = 0
    temperature: float = 0.0
    max_tokens: int | None = None
    concurrency: int = 4
    user_llm_url: str | None = None
    user_llm_model: str | None = None
    user_llm_key: str | None = None
    torch_threads: int = 0
    device: str = "cpu"
    base_model: str | None = None
    fresh: bool = False
    progress: bool = True
    chart: bool = True


def plan(cfg: EvalConfig) -> tuple[list[Target], list]:
    """Check the configuration and load every task's items before anything starts.

    Returns:
        ``(targets, tasks)``.

    Raises:
        ValueError: no model, a bad model path or URL, an unknown task, a bad limit / concurrency /
            temperature, or a benchmark's data package is missing.
    """
    if not cfg.model_paths and not cfg.server_urls:
        raise ValueError("give at least one --model-path or --server-url")
    if cfg.limit is not None and cfg.limit < 1:
        raise ValueError("--limit must be at least 1")
    if cfg.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    if not 0.0 <= cfg.temperature <= 2.0:
        raise ValueError("--temperature must be in [0, 2]")
    if cfg.max_tokens is not None and cfg.max_tokens < 1:
        raise ValueError("--max-tokens must be at least 1")
    if not cfg.tasks or len(set(cfg.tasks)) != len(cfg.tasks):
        raise ValueError("--eval-tasks must name each task once")
    targets = unique_keys([resolve_target(p, cfg.base_model) for p in cfg.model_paths]
                          + [server_target(u) for u in cfg.server_urls])
    tasks = [make_task(t, max_tokens=cfg.max_tokens,
                       **({"user_llm_url": cfg.user_llm_url, "user_llm_model": cfg.user_llm_model,
                           "user_llm_key": cfg.user_llm_key} if t == "conversation" else {}))
             for t in cfg.tasks]
    for task in tasks:
        try:
            task.items()  # fail fast when the data package is missing
        except DataNotInstalledError as exc:
            raise ValueError(str(exc)) from exc
    return targets, tasks


def summarize_records(task, records: list[dict]) -> dict:
    """``{"metric", "value", "n", "ci95", "errors", "groups"}`` from a task's item records."""
    scored = [r for r in records if r["score"] is not None]
    res = {"metric": task.metric, **summarize([r["score"] for r in scored], task.kind, task.bounds),
           "errors": len(records) - len(scored), "groups": {}}
    for g in dict.fromkeys(r["group"] for r in records):
        res["groups"][g] = summarize([r["score"] for r in scored if r["group"] == g], task.kind, task.bounds)
    return res


def run_evaluation(cfg: EvalConfig, argv: list[str] | None = None, log=print) -> dict:
    """Evaluate every model on every task and write the report into ``cfg.out``.

    Args:
        cfg: the settings.
        argv: the command line, recorded in ``results.json``.
        log: where progress lines go.

    Returns:
        The ``results.json`` payload (see :mod:`openclaw_rl.evaluation.report`), with ``"paths"``
        of the written files and ``"markdown"``.

    Raises:
        see :func:`plan`; ``RuntimeError`` when a server does not start; request errors that are
        not item errors (the run is resumable: run the same command again).
    """
    targets, tasks = plan(cfg)
    out = Path(cfg.out).expanduser().resolve()  # servers run in the repository root
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    payload = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": argv,
               "settings": {k: v for k, v in asdict(cfg).items() if k not in ("api_key", "user_llm_key", "progress")},
               "models": [{"key": t.key, "label": t.label, "spec": t.spec, "kind": t.kind} for t in targets],
               "tasks": {t.name: {"metric": t.metric, "kind": t.kind, "max_tokens": t.max_tokens} for t in tasks},
               "results": {t.name: {} for t in tasks}, "deltas": {}, "wall_s": 0.0}
    per_item: dict[str, dict[str, dict[str, float]]] = {t.name: {} for t in tasks}
    logs = {}  # opened before any server starts: a resume with other settings fails at once
    for target in targets:
        for task in tasks:
            settings = {"model": target.fingerprint, "task": task.name, "seed": cfg.seed,
                        "temperature": cfg.temperature, **task.settings()}
            logs[target.key, task.name] = ItemLog(out / "items" / target.key / f"{task.name}.jsonl", settings,
                                                  fresh=cfg.fresh)
    for target in targets:
        log(f"[eval] {target.label}: " + ("using " + target.url if target.kind == "server" else
                                          "starting a server (first use of a built-in model converts it)..."))
        with serving(target, out / "servers" / target.key, api_key=cfg.api_key, torch_threads=cfg.torch_threads,
                     device=cfg.device) as endpoint:
            client = EvalClient(endpoint.base_url, endpoint.api_key, run_id=f"{target.key}-{uuid.uuid4().hex[:8]}",
                                temperature=cfg.temperature, seed=cfg.seed, model_path=target.model_path)
            for task in tasks:
                item_log = logs[target.key, task.name]
                records = run_items(task, client, item_log, limit=cfg.limit, concurrency=cfg.concurrency,
                                    progress=cfg.progress, desc=f"{target.label} {task.name}")
                res = summarize_records(task, records)
                res["wall_s"] = round(item_log.wall_s, 1)
                payload["results"][task.name][target.key] = res
                per_item[task.name][target.key] = {r["id"]: r["score"] for r in records if r["score"] is not None}
                payload["wall_s"] = round(time.monotonic() - t_start, 1)
                write_report(payload, out, chart=False)
                lo, hi = res["ci95"]
                log(f"[eval] {target.label} {task.name}: {task.metric} = {res['value']:.3f} "
                    f"[{lo:.3f}, {hi:.3f}] (n={res['n']}, errors={res['errors']}, {res['wall_s']:.0f}s)")
    first = targets[0].key
    for task in tasks:
        payload["deltas"][task.name] = {
            t.key: {"vs": first, **paired_delta(per_item[task.name][first], per_item[task.name][t.key])}
            for t in targets[1:]}
    payload["wall_s"] = round(time.monotonic() - t_start, 1)
    paths = write_report(payload, out, chart=cfg.chart)
    payload["markdown"] = markdown_table(payload)
    payload["paths"] = {k: str(v) for k, v in paths.items()}
    return payload



__all__ = ["EvalConfig", "plan", "run_evaluation", "summarize_records"]
