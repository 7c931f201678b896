"""The serving / collection / judging side of an OpenClaw training job.

:class:`OpenClawRolloutService` is the rollout service (:class:`slime.plugins.hooks.RolloutService`)
slime's rollout manager owns, registered as ``openclaw`` (entry points
``slime.rollout_services``): it starts the intercept server (or uses ``--server-url``), opens the
trajectory store, imports ``--data-path`` for offline training, runs the judge loop behind
serving with the judge the method builds, exposes the store as the rollout function's data
source, and publishes new weights to the server (``POST /admin/update_weights_from_disk``;
serving keeps answering while the engine swaps them in).
"""

from __future__ import annotations

import logging
import os

import httpx
from pathlib import Path
from typing import Any

from openclaw_rl.agentic.family import family_class, family_names
from openclaw_rl.capture.export import import_sessions, read_session_file
from openclaw_rl.capture.records import TurnType
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.capture.text_turns import needs_ids, tokenize_untokenized_turns
from openclaw_rl.rollout.data_source import StoreDataSource
from openclaw_rl.rollout.devices import server_backend_args, server_device_args, server_env
from openclaw_rl.rollout.flags import SERVER_SIDE_FLAGS, OpenClawFlags
from openclaw_rl.rollout.gate_items import GateItems
from openclaw_rl.rollout.history import HistoryPathError, history_counts, history_kind, history_line, load_history
from openclaw_rl.rollout.judge_loop import JudgeLoop
from openclaw_rl.rollout.prompt_rollout import DEFAULT_GENERATE
from openclaw_rl.rollout.publish import post_weights
from openclaw_rl.rollout.turn_judges import PRMTurnJudge, build_prm
from openclaw_rl.tls import tls_context
from slime.config.arguments import FlagSection
from slime.orchestration.fault_points import reached
from slime.config.flags import ConfigError, option_name
from slime.plugins.hooks import RolloutChoice
from slime.config.paths import caller_cwd, published_dir

__all__ = ["LIVE_ROLLOUT", "PROMPT_ROLLOUT", "OpenClawRolloutService", "PRMTurnJudge", "build_turn_judge"]

log = logging.getLogger(__name__)

#: the live-conversation rollout (judged turns from the store; one sample per group)
LIVE_ROLLOUT = "openclaw_rl.rollout.openclaw_rollout.generate_rollout"
#: the prompt-dataset rollout (``--prompt-data``; groups of ``--n-samples-per-prompt``)
PROMPT_ROLLOUT = "openclaw_rl.rollout.prompt_rollout.generate_rollout"


def build_turn_judge(cfg: Any, method: Any = None, service: Any = None):
    """The judge of a run: ``--custom-rm-path`` if given, else the method's
    (:meth:`slime.methods.Method.build_judge` with ``service``), else the PRM (local or
    ``--prm-url``)."""
    if cfg.custom_rm_path:
        from openclaw_rl.rollout.custom_rm import CustomRewardJudge
        return CustomRewardJudge(cfg.custom_rm_path, cfg)
    judge = method.build_judge(service) if method is not None else None
    return judge if judge is not None else PRMTurnJudge(build_prm(cfg))


class TextTurns:
    """Ids for the store's turns that arrived as text (:mod:`openclaw_rl.capture.text_turns`),
    from the policy's tokenizer (loaded on first need).

    Args:
        store: the trajectory store.
        model_path: the policy (``--model-path``), whose chat template renders the turns.
    """

    def __init__(self, store: TrajectoryStore, model_path: str | None):
        self.store, self.model_path, self._tokenizer = store, model_path, None
        self.tokenized = 0

    def tokenizer(self):
        """The policy's tokenizer (loaded on first call)."""
        return self._tok()

    def _tok(self):
        if self._tokenizer is None:
            from openclaw_rl.models import load_tokenizer
            self._tokenizer = load_tokenizer(self.model_path)
        return self._tokenizer

    def tokenize_all(self) -> int:
        """Tokenize every main turn of the store that has no ids; returns how many."""
        todo = self.store.untokenized_turns()
        if todo and self.model_path:
            n = tokenize_untokenized_turns(self.store, self._tok(), todo)
            self.tokenized += n
            log.info("tokenized %d imported turn(s) without ids with %s's chat template", n, self.model_path)
            return n
        return 0

    def ensure_ids(self, turns: list) -> list:
        """``turns`` with ids made for those without (in place, and in the store); returns them."""
        todo = [t for t in turns if needs_ids(t)]
        if todo and self.model_path:
            self.tokenized += tokenize_untokenized_turns(self.store, self._tok(), todo)
        return turns


class OpenClawRolloutService:
    """Server + store + judges for one run.

    Args:
        cfg: the run's :class:`slime.config.arguments.SlimeConfig` (this service's flags in
            ``cfg.sections["service"]``, :class:`OpenClawFlags`).
        last_saved_step: the step of the checkpoint the trainer resumed from (None: fresh run);
            turns trained after it are trained again (see ``TrajectoryStore.recover``).
        method: the run's method (builds the judge); None: the PRM.
        judge: override the judge (tests); default :func:`build_turn_judge`.
    """

    Flags = OpenClawFlags

    @classmethod
    def flag_sections(cls) -> list[FlagSection]:
        """Every registered agent family's flags (:attr:`openclaw_rl.agentic.family.AgentFamily.Flags`),
        each a section whose values land in ``cfg.sections["family"]`` (``--gui-max-steps``, ...).

        Raises:
            slime.config.flags.ConfigError: a family's entry point does not import.
        """
        out = []
        for name in family_names():
            fam = family_class(name)
            if fam.Flags is not None:
                out.append(FlagSection(fam.Flags, f"agent family {name}", key="family"))
        return out

    def __init__(self, cfg, last_saved_step: int | None = None, method: Any = None, judge=None):
        x = self.flags = cfg.flags_of("service", OpenClawFlags)
        self.cfg = cfg
        default_dir = Path(cfg.save) / "rl_buffer" if cfg.save else caller_cwd() / "rl_buffer"
        self.buffer_dir = Path(x.rl_buffer_dir or default_dir).absolute()
        self.store = TrajectoryStore(self.buffer_dir)
        recovered = self.store.recover(last_saved_step)
        log.info("store %s recovered: %s", self.store.path, recovered)
        self.server = None
        self.api_key = x.api_key
        self.text_turns = TextTurns(self.store, cfg.model_path)
        if x.data_path:
            sessions, turns = import_sessions(self.store, x.data_path)  # known sessions are skipped
            log.info("imported %d new sessions / %d turns from %s into %s", sessions, turns, x.data_path,
                     self.store.path)
            self.server_url = x.server_url
        elif x.server_url:
            self.server_url = x.server_url.rstrip("/")
        else:
            from openclaw_rl.server.launcher import start_server
            log_dir = Path(cfg.log_dir)
            log_dir.mkdir(parents=True, exist_ok=True)
            self.server = start_server(
                cfg.model_path, self.buffer_dir, "--served-model-name", x.served_model_name,
                "--default-temperature", str(cfg.rollout_temperature),
                "--default-max-tokens", str(cfg.rollout_max_response_len),
                "--session-idle-timeout", str(x.session_idle_timeout),
                "--torch-threads", str(x.server_torch_threads), "--no-resume-served-version",
                *(("--inject-lessons", str(x.inject_lessons)) if x.inject_lessons else ()),
                "--metrics-dir", str(log_dir.absolute()),
                *(("--admin-api-key", x.admin_api_key) if x.admin_api_key else ()),
                "--weights-dir", str(published_dir(cfg)), *server_device_args(cfg),
                *server_backend_args(cfg, str(log_dir)),
                api_key=self.api_key, log_dir=log_dir, port=x.port, env=server_env(cfg),
                timeout=180.0 if x.backend == "transformers" else 960.0)  # engine servers load first
            self.server_url = self.server.base_url.rsplit("/v1", 1)[0]
            log.warning("serving at %s/v1; dashboard: %s/dashboard%s", self.server_url, self.server_url,
                        "?key=<admin key>" if (x.admin_api_key or self.api_key) else "")
        self.history = None
        if x.history_path:  # queued before anything judges: the history comes first (openclaw_rl.rollout.history)
            self.history = load_history(self.store, x.history_path, x.history_max_turns)
        self.text_turns.tokenize_all()  # imported turns without ids, before anything judges them
        from openclaw_rl.models import resolve_model_path
        from openclaw_rl.vl_models import load_processor

        processor = load_processor(resolve_model_path(cfg.model_path)) if cfg.model_path else None
        self.data_source = StoreDataSource(self.store, max_staleness=cfg.max_staleness,
                                           prepare=self.text_turns.ensure_ids,
                                           finite=bool(x.data_path) or x.history_only, history_only=x.history_only,
                                           newest_first=cfg.sample_order == "newest",
                                           processor=processor, holdout_every=x.gate_holdout_every,
                                           tokenizer=self.text_turns.tokenizer if cfg.model_path else None)
        self.gate_items = GateItems(self.store, x.gate_holdout_max, processor)
        self.judge_loop = None
        if not cfg.prompt_data:  # prompt-dataset rollouts reward inside the rollout
            from slime.plugins.failures import FailureBudget
            judge = judge or build_turn_judge(cfg, method, self)
            budget = FailureBudget(cfg.max_plugin_failure_fraction,
                                   getattr(judge, "name", None) or f"the {judge.method} judge", cfg.rollout_batch_size)
            self.data_source.health_check = budget.check  # too many failed judgements in a step stop the run
            self.judge_loop = JudgeLoop(self.store, judge, num_workers=x.num_judge_workers,
                                        failure_budget=budget, prepare=self.text_turns.ensure_ids).start()

    # ------------------------------------------------------------------ class-level protocol
    @classmethod
    def default_rollout(cls, cfg: Any) -> RolloutChoice:
        """Live conversations (one judged turn per group), or with ``--prompt-data`` the
        prompt-dataset rollout (groups of ``--n-samples-per-prompt``, through the generate hook)."""
        if cfg.prompt_data:
            return RolloutChoice(PROMPT_ROLLOUT, groups=True, generates=True)
        return RolloutChoice(LIVE_ROLLOUT, groups=False, generates=False)

    @classmethod
    def extra_gpus(cls, cfg: Any) -> tuple[int, list[str]]:
        """GPUs this service needs besides the rollout engines' (:func:`slime.orchestration.placement.rollout_gpu_request`):
        ``--prm-num-gpus`` for the PRM/teacher, pinned to ``--prm-gpu-ids`` when given."""
        from slime.orchestration.placement import gpu_ids

        x = cfg.flags_of("service", OpenClawFlags)
        return int(x.prm_num_gpus), gpu_ids(x.prm_gpu_ids)

    @classmethod
    def default_num_rollout(cls, cfg: Any) -> int | None:
        """Offline (``--data-path``): one pass over the file, ``ceil(main turns /
        --rollout-batch-size)`` steps (the last batch may be short: offline data ends, see
        :class:`StoreDataSource`); ``--history-only``: ``ceil(--history-max-turns /
        --rollout-batch-size)`` (fewer when the history is shorter); live traffic: None
        (``--num-rollout`` is required)."""
        x = cfg.flags_of("service", OpenClawFlags)
        if x.history_only and x.history_path:  # at most the cap; the run stops early when the history is used up
            return max(1, -(-x.history_max_turns // cfg.rollout_batch_size))
        if not x.data_path or not os.path.isfile(x.data_path):
            return None
        n = sum(t.turn_type == TurnType.MAIN for _, turns in read_session_file(x.data_path) for t in turns)
        return max(1, -(-n // cfg.rollout_batch_size))

    @classmethod
    def default_generate(cls) -> str:
        """One chat completion through the intercept server, read back token-exactly."""
        return DEFAULT_GENERATE

    @classmethod
    def check(cls, cfg: Any) -> list[str]:
        """Start-up checks (no side effects): ``--data-path`` exists and parses, local judge
        model folders exist, ``--prompt-data`` is not combined with ``--data-path``.

        Returns:
            One-line warnings: server-side flags given where no server is started
            (``--server-url`` or ``--data-path``).

        Raises:
            ConfigError / ValueError: one line naming the flag or the file and line.
        """
        from openclaw_rl.methods.hint_flags import check_local_model

        x = cfg.flags_of("service", OpenClawFlags)
        if x.data_path:
            if not os.path.isfile(x.data_path):
                raise ConfigError(f"--data-path {x.data_path}: no such file")
            read_session_file(x.data_path)  # SessionFormatError (a ValueError) names file:line
            if cfg.prompt_data:
                raise ConfigError("--prompt-data generates through the intercept server; it cannot be combined "
                                  "with --data-path (offline recorded sessions)")
        if x.history_path:
            try:
                history_kind(x.history_path)
            except HistoryPathError as exc:
                raise ConfigError(f"--history-path {exc}") from None
        elif x.history_only:
            raise ConfigError("--history-only needs --history-path (the history to train on)")
        check_local_model("--prm-model-path", x.prm_model_path)
        if x.backend != "transformers" and not (x.server_url or x.data_path):
            from openclaw_rl.engine.engine_servers import resolve_engine_python
            try:
                resolve_engine_python(x.backend, x.engine_python)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        warnings = []
        if x.data_path or x.server_url:
            given = [option_name(f) for f in SERVER_SIDE_FLAGS if f in cfg.explicit]
            if given:
                why = "--data-path (offline)" if x.data_path else "--server-url"
                warnings.append(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} ignored: with {why} "
                                "the job starts no intercept server")
        return warnings

    # ------------------------------------------------------------------ instance protocol
    def rollout_args(self) -> Any:
        """The run's config with ``server_url`` and ``rl_buffer_dir`` of this service (what the
        default generate hook and user plugins reach the server and store through)."""
        values = {"rl_buffer_dir": str(self.buffer_dir)}
        if self.server_url:
            values["server_url"] = self.server_url
        return self.cfg.with_section_values("service", **values)

    def served_version(self) -> int | None:
        """The weight version the server serves now (``GET /healthz``), or None without a server
        or when it does not answer; the data source's staleness counts from it."""
        if not self.server_url:
            return None
        try:
            version = int(httpx.get(f"{self.server_url}/healthz", timeout=30,
                                    verify=tls_context()).json()["weight_version"])
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return None
        self.data_source.current_version = version
        return version

    def gate_data(self):
        """The promotion gate's items (:class:`openclaw_rl.rollout.gate_items.GateItems`): held-out
        turns, canary prompts, the reference set."""
        return self.gate_items.data()

    def publish_weights(self, path: str, version: int, gate: dict | None = None) -> int:
        """Send new weights to the serving engine (:func:`openclaw_rl.rollout.publish.post_weights`:
        an unreachable server is retried for ``--publish-retry-s``), with the promotion gate's
        metrics of the version (``gate``), which the server records in its version list;
        returns the version it now serves.

        Raises:
            slime.errors.PublishFailed: the server refused the update (e.g. the folder vanished
                before it loaded it) or stayed unreachable; it keeps serving its older weights.
        """
        self.data_source.current_version = version
        if not self.server_url:
            return version  # offline training: nothing serves
        reached("publish", version)  # a fault test may pull the folder away here (slime.orchestration.fault_points)
        key = self.flags.admin_api_key or self.api_key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return post_weights(self.server_url, path, version, headers, retry_s=self.flags.publish_retry_s, gate=gate)

    def metrics(self) -> dict:
        """Judge counters, data-source counters and the backlog."""
        out = {f"judge/{k}": v for k, v in (self.judge_loop.stats if self.judge_loop else {}).items()}
        out.update({f"data/{k}": v for k, v in self.data_source.stats.items()})
        out.update({f"backlog/{k}": v for k, v in self.data_source.backlog().items()})
        if self.history is not None:
            out.update(self.history_metrics())
        return out

    def history_metrics(self) -> dict:
        """``history/<count>`` and ``history/verdict_<v>`` of the history queued for this run
        (:func:`openclaw_rl.rollout.history.history_counts`)."""
        c = history_counts(self.store, self.history.turn_ids, self.history.over_cap)
        verdicts = c.pop("verdicts")
        return {**{f"history/{k}": v for k, v in c.items()},
                **{f"history/verdict_{k}": v for k, v in verdicts.items()}}

    def close(self) -> None:
        """Stop judges and the server this service started (and log what became of the history)."""
        self.data_source.close()
        if self.judge_loop is not None:
            self.judge_loop.stop()
        if self.history is not None:
            log.warning("%s", history_line(history_counts(self.store, self.history.turn_ids, self.history.over_cap)))
        if self.server is not None:
            from openclaw_rl.server.launcher import stop_server
            stop_server(self.server)
        self.store.close()
