"""Flags of the OpenClaw rollout service (serving, the trajectory store, the default PRM judge).

One declaration per flag (:func:`slime.flags.flag`): the default, the help text and the
environment fallback. Environment variables are read only when the flag is not on the command
line (the seed's launch scripts: ``OPENCLAW_PORT``, ``OPENCLAW_API_KEY``, ``DATA_PATH``,
``PRM_MODEL_PATH``, ``PRM_URL``, ``PRM_MODEL``, ``PRM_API_KEY``, ``MAJORITY_VOTE_N``,
``MAJORITY_VOTE_THRESHOLD``); a bad value is a one-line error. The methods' own flags (hint judge,
teacher, Combine weights) live with the methods in :mod:`openclaw_rl.methods`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from slime.flags import flag

__all__ = ["SERVER_SIDE_FLAGS", "OpenClawFlags", "service_flags"]

#: flags that only configure the intercept server the job starts itself
SERVER_SIDE_FLAGS = ("port", "served_model_name", "session_idle_timeout", "server_torch_threads")


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
    served_model_name: str = flag("policy", "model name the started server reports")
    session_idle_timeout: float = flag(600.0, "seconds of silence that end a session on the started server",
                                       gt=0)
    server_torch_threads: int = flag(1, "torch threads of the server the job starts (1: the trainer shares "
                                     "the CPU; 0: one per core)", ge=0)
    data_path: str | None = flag(None, "train offline from a recorded session file (JSON/JSONL) instead of "
                                 "live traffic (no server is started)", env="DATA_PATH", path="input")
    prm_model_path: str | None = flag(None, "local PRM judge model", env="PRM_MODEL_PATH", path="model",
                                      default_text="the policy's base model")
    prm_url: str | None = flag(None, "OpenAI-compatible endpoint for the PRM judge (instead of a local model)",
                               env="PRM_URL")
    prm_model_name: str | None = flag(None, "model name at --prm-url", env="PRM_MODEL", default_text="default")
    prm_api_key: str | None = flag(None, "API key of --prm-url", env="PRM_API_KEY")
    prm_mode: Literal["auto", "lexical", "hybrid", "prototype", "channel", "logprob", "generate"] = flag(
        "auto", "local PRM judge mode (docs/judges.md): lexical, hybrid, prototype, channel, logprob or generate; "
        "auto = the best measured mode on the embedded model (lexical) for a builtin: judge model, logprob for a "
        "model folder", env="PRM_MODE")
    majority_vote_n: int = flag(1, "judge votes per turn (PRM and hint judge)", env="MAJORITY_VOTE_N", ge=1)
    majority_vote_threshold: float = flag(0.5, "fraction of the valid votes the winning verdict needs, else 0",
                                          env="MAJORITY_VOTE_THRESHOLD", ge=0, le=1)
    num_judge_workers: int = flag(2, "turns judged concurrently (and reward models built per plugin)", ge=1)
    rollout_timeout_s: float | None = flag(None, "give up waiting for judged turns after this many seconds",
                                           gt=0, default_text="wait")


def service_flags(args: Any) -> OpenClawFlags:
    """The service flags of a run's ``args``: a :class:`slime.arguments.SlimeConfig`'s
    ``"service"`` section; for any other object, the declared defaults overridden by its
    same-named attributes."""
    if hasattr(args, "flags_of"):
        return args.flags_of("service", OpenClawFlags)
    names = [f.name for f in dataclasses.fields(OpenClawFlags)]
    return OpenClawFlags(**{n: getattr(args, n) for n in names if getattr(args, n, None) is not None})
