"""The serving / collection / judging side of an OpenClaw training job.

:class:`OpenClawRolloutService` is what slime's rollout manager owns: it starts the intercept
server (or uses ``--server-url``), opens the trajectory store, imports ``--data-path`` for
offline training, runs the judge loop behind serving, exposes the store as the rollout function's
data source, and publishes new weights to the server (``POST /admin/update_weights_from_disk``;
serving keeps answering while the engine swaps them in).
"""

from __future__ import annotations

import logging
from pathlib import Path

import httpx

from openclaw_rl.capture.export import import_sessions
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.rollout.data_source import StoreDataSource
from openclaw_rl.rollout.judge_loop import JudgeLoop, JudgeResult

log = logging.getLogger(__name__)


class PRMTurnJudge:
    """Binary RL's judge: PRM majority vote -> reward +1 / -1; verdict 0 or no next state -> not
    trainable (counted, mask 0)."""

    method = "prm"

    def __init__(self, prm):
        self.prm = prm

    async def judge(self, turn) -> JudgeResult:
        """Score one turn with the PRM (see :mod:`openclaw_rl.judges.prm`)."""
        if not turn.next_state:
            return JudgeResult(None, False, {"verdict": 0, "reason": "no_next_state"})
        j = await self.prm.judge_turn(turn)
        details = j.to_metadata()
        return JudgeResult(float(j.verdict) if j.verdict else None, j.verdict != 0, details)


def _build_prm(cfg):
    from openclaw_rl.judges.modes import build_backend
    from openclaw_rl.judges.prm import PRMJudge

    x = cfg.extra
    backend = build_backend(prm_url=x.get("prm_url"), prm_model=x.get("prm_model_name"),
                            prm_api_key=x.get("prm_api_key"), model_path=x.get("prm_model_path") or cfg.model_path,
                            mode=x.get("prm_mode") or "auto")
    return PRMJudge(backend, majority_vote_n=x.get("majority_vote_n", 1),
                    threshold=x.get("majority_vote_threshold", 0.5), num_workers=x.get("num_judge_workers", 2))


def _build_hint_judge(cfg, prm=None):
    """The OPD hint judge, by ``--hint-mode`` (:func:`openclaw_rl.judges.modes.resolve_hint_mode`):
    ``extractive`` (no model); ``model``: ``--judge-url``, else a local model with structured
    decoding (``--judge-model-path`` / ``JUDGE_MODEL_PATH``, default the policy's base model; it
    shares the PRM's loaded weights when both are the same local model)."""
    from openclaw_rl.judges.backends import OpenAIJudgeBackend
    from openclaw_rl.judges.hints import HintJudge
    from openclaw_rl.judges.modes import resolve_hint_mode

    x = cfg.extra
    mode = resolve_hint_mode(x.get("hint_mode"), x.get("judge_url"), x.get("judge_model_path") or cfg.model_path)
    kw = dict(temperature=x.get("hint_temperature", 0.7))
    if mode == "extractive":
        from openclaw_rl.judges.hint_extract import ExtractiveHintBackend
        backend = ExtractiveHintBackend()
    elif x.get("judge_url"):
        backend = OpenAIJudgeBackend(x["judge_url"], x.get("judge_model_name") or "default",
                                     api_key=x.get("judge_api_key"), max_tokens=x.get("hint_max_new_tokens", 128), **kw)
    else:
        from openclaw_rl.judges.hint_backend import StructuredHintBackend
        path = x.get("judge_model_path") or cfg.model_path
        shared = getattr(getattr(prm, "backend", None), "model_path", None) == str(path)
        backend = StructuredHintBackend(path, max_new_tokens=x.get("hint_max_new_tokens", 64),
                                        model=prm.backend.model if shared else None,
                                        tokenizer=prm.backend.tokenizer if shared else None, **kw)
    return HintJudge(backend, majority_vote_n=x.get("majority_vote_n", 1), min_chars=x.get("hint_min_chars", 15))


def build_turn_judge(cfg):
    """The judge for a run: ``--custom-rm-path`` if given; else by ``--advantage-estimator``:
    ``opd`` the hint judge, ``combine`` the PRM and the hint judge, otherwise the PRM (local or
    ``--prm-url``)."""
    if cfg.custom_rm_path:
        from openclaw_rl.rollout.custom_rm import CustomRewardJudge
        return CustomRewardJudge(cfg.custom_rm_path, cfg)
    if cfg.advantage_estimator in ("opd", "combine"):
        from openclaw_rl.models import load_tokenizer
        from openclaw_rl.opd.judge import CombineTurnJudge, OPDTurnJudge

        tokenizer = load_tokenizer(cfg.model_path)
        if cfg.advantage_estimator == "opd":
            return OPDTurnJudge(_build_hint_judge(cfg), tokenizer)
        prm = _build_prm(cfg)
        return CombineTurnJudge(prm, _build_hint_judge(cfg, prm), tokenizer)
    return PRMTurnJudge(_build_prm(cfg))


class OpenClawRolloutService:
    """Server + store + judges for one run.

    Args:
        cfg: the run's :class:`slime.arguments.SlimeConfig` (openclaw flags in ``cfg.extra``).
        last_saved_step: the step of the checkpoint the trainer resumed from (None: fresh run);
            turns trained after it are trained again (see ``TrajectoryStore.recover``).
        judge: override the judge (tests); default :func:`build_turn_judge`.
    """

    def __init__(self, cfg, last_saved_step: int | None = None, judge=None):
        x = cfg.extra
        self.cfg = cfg
        default_dir = Path(cfg.save) / "rl_buffer" if cfg.save else Path("rl_buffer")
        self.buffer_dir = Path(x.get("rl_buffer_dir") or default_dir)
        self.store = TrajectoryStore(self.buffer_dir)
        recovered = self.store.recover(last_saved_step)
        log.info("store %s recovered: %s", self.store.path, recovered)
        self.server = None
        self.api_key = x.get("api_key")
        if x.get("data_path"):
            sessions, turns = import_sessions(self.store, x["data_path"])  # known sessions are skipped
            log.info("imported %d new sessions / %d turns from %s into %s", sessions, turns, x["data_path"],
                     self.store.path)
            self.server_url = x.get("server_url")
        elif x.get("server_url"):
            self.server_url = x["server_url"].rstrip("/")
        else:
            from openclaw_rl.server.launcher import start_server
            log_dir = Path(x.get("log_dir") or "logs")
            log_dir.mkdir(parents=True, exist_ok=True)
            self.server = start_server(
                cfg.model_path, self.buffer_dir, "--served-model-name", x.get("served_model_name", "policy"),
                "--default-temperature", str(cfg.rollout_temperature),
                "--default-max-tokens", str(cfg.rollout_max_response_len),
                "--session-idle-timeout", str(x.get("session_idle_timeout", 600.0)),
                "--torch-threads", str(x.get("server_torch_threads", 1)),
                api_key=self.api_key, log_dir=log_dir, port=x.get("port"))
            self.server_url = self.server.base_url.rsplit("/v1", 1)[0]
        self.data_source = StoreDataSource(self.store, max_staleness=cfg.max_staleness)
        self.judge_loop = None
        if not getattr(cfg, "prompt_data", None):  # prompt-dataset rollouts reward inside the rollout
            from slime.plugin_failures import FailureBudget
            judge = judge or build_turn_judge(cfg)
            budget = FailureBudget(getattr(cfg, "max_plugin_failure_fraction", 0.5),
                                   getattr(judge, "name", None) or f"the {judge.method} judge", cfg.rollout_batch_size)
            self.data_source.health_check = budget.check  # too many failed judgements in a step stop the run
            self.judge_loop = JudgeLoop(self.store, judge, num_workers=x.get("num_judge_workers", 2),
                                        failure_budget=budget).start()

    def publish_weights(self, path: str, version: int) -> int:
        """Send new weights to the serving engine; returns the version it now serves.

        Raises:
            RuntimeError: the server refused the update (its error message included).
        """
        self.data_source.current_version = version
        if not self.server_url:
            return version  # offline training: nothing serves
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        r = httpx.post(f"{self.server_url}/admin/update_weights_from_disk", headers=headers,
                       json={"model_path": str(path), "weight_version": int(version)}, timeout=600)
        if r.status_code != 200:
            raise RuntimeError(f"weight update to version {version} failed: {r.status_code} {r.text}")
        return r.json()["weight_version"]

    def metrics(self) -> dict:
        """Judge counters, data-source counters and the backlog."""
        out = {f"judge/{k}": v for k, v in (self.judge_loop.stats if self.judge_loop else {}).items()}
        out.update({f"data/{k}": v for k, v in self.data_source.stats.items()})
        out.update({f"backlog/{k}": v for k, v in self.data_source.backlog().items()})
        return out

    def close(self) -> None:
        """Stop judges and the server this service started."""
        self.data_source.close()
        if self.judge_loop is not None:
            self.judge_loop.stop()
        if self.server is not None:
            from openclaw_rl.server.launcher import stop_server
            stop_server(self.server)
        self.store.close()
