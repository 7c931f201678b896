"""Flags of the OpenClaw rollout service (serving, the trajectory store, the default PRM judge).

One declaration per flag (:func:`slime.config.flags.flag`): the default, the help text and the
environment fallback. Environment variables are read only when the flag is not on the command
line (the seed's launch scripts: ``OPENCLAW_PORT``, ``OPENCLAW_API_KEY``, ``DATA_PATH``,
``HISTORY_PATH``, ``HISTORY_MAX_TURNS``, ``PRM_MODEL_PATH``, ``PRM_URL``, ``PRM_MODEL``, ``PRM_API_KEY``,
``MAJORITY_VOTE_N``, ``MAJORITY_VOTE_THRESHOLD``, ``PRM_ENABLE``, ``PRM_M``, ``PRM_TEMPERATURE``,
``PRM_MAX_NEW_TOKENS``); a bad value is a one-line error.

Two vote counts, two judges: ``--majority-vote-n`` is the Binary RL turn judge's (live turns, judged
from the next state; votes of ``1 / -1 / 0`` reduced by majority with ``--majority-vote-threshold``
to one verdict), ``--prm-m`` the step PRM's (agent rollouts, ``--prm-enable``; votes of ``+1 / -1``
reduced by their mean to a score in ``[-1, 1]``). Upstream reads ``PRM_M`` for both; here each judge
has its own. Defaults of the ``--prm-*`` step flags follow upstream (``prm_m`` 3,
``prm_max_new_tokens`` 4096, ``prm_temperature`` 1.0 as its SWE PRM); ``--prm-num-gpus`` and
``--prm-num-gpus-per-engine`` are stored for the GPU launch (0 on CPU). The methods' own flags (hint judge,
teacher, Combine weights) live with the methods in :mod:`openclaw_rl.methods`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from slime.config.flags import flag

__all__ = ["SERVER_SIDE_FLAGS", "OpenClawFlags", "service_flags"]

#: flags that only configure the intercept server the job starts itself
SERVER_SIDE_FLAGS = ("port", "served_model_name", "session_idle_timeout", "server_torch_threads", "backend",
                     "engine_python", "engine_args", "engine_kv_cache_gib", "inject_lessons")


@dataclass(frozen=True)
class OpenClawFlags:
    """The OpenClaw rollout service's flags (``SlimeConfig.sections["service"]``)."""

    rl_buffer_dir: str | None = flag(None, "trajectory store folder", default_text="<save>/rl_buffer or ./rl_buffer",
                                     path="output")
    server_url: str | None = flag(None, "use a running intercept server (its /admin endpoint receives new "
                                  "weights) instead of starting one")
    port: int = flag(30000, "port of the intercept server the job starts", env="OPENCLAW_PORT", gt=0, lt=65536)
    api_key: str | None = flag(None, "API key of the intercept server (the started one or --server-url)",
                               env="OPENCLAW_API_KEY")
    admin_api_key: str | None = flag(None, "key of the server's /admin endpoints (weight updates): given to the "
                                     "started server, sent to --server-url", env="OPENCLAW_ADMIN_API_KEY",
                                     default_text="none: the server takes updates only from loopback")
    publish_retry_s: float = flag(60.0, "keep retrying a weight publish this many seconds while the server is "
                                  "unreachable (restarting); then the step's publish counts as failed "
                                  "(publish/failures) and training goes on", ge=0)
    gate_holdout_every: int = flag(0, "hold every N-th judged turn (by turn id, verdict +1 or -1) out of "
                                   "training for the promotion gate's check of the user's own replies (0: none; "
                                   "make run uses 8)", ge=0)
    gate_holdout_max: int = flag(8, "most recent held-out turns the promotion gate checks", ge=1)
    served_model_name: str = flag("policy", "model name the started server reports")
    inject_lessons: int = flag(0, "the started server adds the top N lessons (accepted hindsight hints, "
                               "de-duplicated) to the system prompt of served requests (0: off)", ge=0)
    session_idle_timeout: float = flag(600.0, "seconds of silence that end a session on the started server",
                                       gt=0)
    server_torch_threads: int = flag(1, "torch threads of the server the job starts (1: the trainer shares "
                                     "the CPU; 0: one per core)", ge=0)
    backend: Literal["transformers", "vllm", "sglang"] = flag(
        "transformers", "inference engine of the server the job starts: transformers (in the server's process), "
        "vllm or sglang (engine servers in their own environment on the rollout GPUs, one per "
        "--rollout-num-gpus-per-engine; the intercept server stays in front and records what they sample)")
    engine_python: str | None = flag(None, "interpreter of the vllm/sglang engine's environment",
                                     default_text=".venv-vllm/bin/python (make vllm) or .venv-sglang/bin/python")
    engine_args: str = flag("", "more flags for each vllm/sglang engine server, one string (shell words)")
    engine_kv_cache_gib: int | None = flag(None, "vLLM on CPU: GiB of KV cache of the started server's engine "
                                           "(VLLM_CPU_KVCACHE_SPACE wins when set)", ge=1,
                                           default_text="4 context windows, at most a quarter of the free memory")
    data_path: str | None = flag(None, "train offline from a recorded session file (JSON/JSONL) instead of "
                                 "live traffic (no server is started)", env="DATA_PATH", path="input")
    history_path: str | None = flag(None, "conversations from before this run to judge and train on first, the "
                                    "most recent first: an OpenClaw state folder (~/.openclaw), a trajectory bundle, "
                                    "a trajectory store folder (e.g. what openclaw-rl import-openclaw --out wrote) or "
                                    "a session file (docs/history.md)", env="HISTORY_PATH", path="input")
    history_max_turns: int = flag(256, "most history main turns judged and trained in this run (the most recent "
                                  "ones; older ones are left out): live turns wait at most this many turns",
                                  env="HISTORY_MAX_TURNS", ge=1)
    history_only: bool = flag(False, "train on --history-path only, then stop: live turns are not trained in "
                              "this run, and it ends when the history is used up (the main job's history phase)")
    prm_model_path: str | None = flag(None, "local PRM judge model", env="PRM_MODEL_PATH", path="model",
                                      default_text="the policy's base model")
    prm_url: str | None = flag(None, "OpenAI-compatible endpoint for the PRM judge (instead of a local model)",
                               env="PRM_URL")
    prm_model_name: str | None = flag(None, "model name at --prm-url", env="PRM_MODEL", default_text="default")
    prm_api_key: str | None = flag(None, "API key of --prm-url", env="PRM_API_KEY")
    prm_mode: Literal["auto", "classifier", "probe", "lexical", "hybrid", "prototype", "channel", "logprob", "generate"] = flag(
        "auto", "local PRM judge mode (docs/judges.md): classifier, probe, lexical, hybrid, prototype, channel, logprob or "
        "generate; auto = classifier for a builtin: judge model (the best measured without a second model; probe reads better at ~125 ms a turn), logprob for a model folder",
        env="PRM_MODE")
    prm_enable: bool = flag(False, "score every agent step with the step PRM judge (agent rollouts; "
                            "openclaw_rl.agentic.step_prm)", env="PRM_ENABLE")
    prm_m: int = flag(3, "step PRM votes per agent step; the step score is the mean of the valid +1/-1 votes "
                      "(--majority-vote-n is the Binary RL turn judge's, reduced by majority)", env="PRM_M", ge=1)
    prm_temperature: float = flag(1.0, "step PRM sampling temperature (> 0 for a local judge model)",
                                  env="PRM_TEMPERATURE", ge=0)
    prm_max_new_tokens: int = flag(4096, "most tokens of one step PRM answer (reasoning, then the verdict line)",
                                   env="PRM_MAX_NEW_TOKENS", ge=1)
    prm_num_gpus: int = flag(0, "GPUs reserved for step PRM engines (0: the judge runs on the rollout's "
                             "device)", ge=0)
    prm_num_gpus_per_engine: int = flag(0, "GPUs per step PRM engine (tensor parallel size; 0: one engine "
                                        "per --prm-num-gpus)", ge=0)
    prm_gpu_ids: str | None = flag(None, "the PRM/teacher GPUs by id (e.g. 6,7), after the rollout engines' in "
                                   "the rollout manager's CUDA_VISIBLE_DEVICES", default_text="the GPUs Ray assigns")
    majority_vote_n: int = flag(1, "judge votes per turn (PRM and hint judge)", env="MAJORITY_VOTE_N", ge=1)
    majority_vote_threshold: float = flag(0.5, "fraction of the valid votes the winning verdict needs, else 0",
                                          env="MAJORITY_VOTE_THRESHOLD", ge=0, le=1)
    num_judge_workers: int = flag(2, "turns judged concurrently (and reward models built per plugin)", ge=1)
    rollout_timeout_s: float | None = flag(None, "give up waiting for judged turns after this many seconds",
                                           gt=0, default_text="wait")



def service_flags(args: Any) -> OpenClawFlags:
    """The service flags of a run's ``args``: a :class:`slime.config.arguments.SlimeConfig`'s
    ``"service"`` section; for any other object, the declared defaults overridden by its
    same-named attributes."""
    if hasattr(args, "flags_of"):
        return args.flags_of("service", OpenClawFlags)
    names = [f.name for f in dataclasses.fields(OpenClawFlags)]
    return OpenClawFlags(**{n: getattr(args, n) for n in names if getattr(args, n, None) is not None})
