"""Command-line flags of the OpenClaw methods (added to slime's parser as an argument group).

Environment fallbacks follow the seed's launch scripts: ``PRM_MODEL_PATH``, ``PRM_MODE``, ``DATA_PATH``,
``MAJORITY_VOTE_N``, ``MAJORITY_VOTE_THRESHOLD``, ``OPENCLAW_API_KEY``, ``OPENCLAW_PORT``,
``JUDGE_MODEL_PATH``, ``OPENCLAW_COMBINE_W_OPD``, ``OPENCLAW_COMBINE_W_RL``.
"""

from __future__ import annotations

import argparse
import os

from openclaw_rl.judges.modes import (DEFAULT_HINT_MODE, DEFAULT_LOCAL_PRM_MODE, HINT_MODES, MODEL_FOLDER_PRM_MODE,
                                      PRM_MODES)


def add_openclaw_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``openclaw`` argument group; values land in ``SlimeConfig.extra``."""
    g = parser.add_argument_group("openclaw")
    g.add_argument("--rl-buffer-dir", default=None,
                   help="trajectory store folder (default <save>/rl_buffer or ./rl_buffer)")
    g.add_argument("--server-url", default=None,
                   help="use a running intercept server (its /admin endpoint receives new weights) "
                        "instead of starting one")
    g.add_argument("--port", type=int, default=int(os.environ.get("OPENCLAW_PORT", "30000")),
                   help="port of the intercept server the job starts (env OPENCLAW_PORT)")
    g.add_argument("--api-key", default=os.environ.get("OPENCLAW_API_KEY"), help="env OPENCLAW_API_KEY")
    g.add_argument("--served-model-name", default="policy")
    g.add_argument("--session-idle-timeout", type=float, default=600.0)
    g.add_argument("--server-torch-threads", type=int, default=1,
                   help="torch threads of the server the job starts (1: the trainer shares the CPU)")
    g.add_argument("--data-path", default=os.environ.get("DATA_PATH") or None,
                   help="train offline from a recorded session file (JSON/JSONL) instead of live traffic")
    g.add_argument("--prm-model-path", default=os.environ.get("PRM_MODEL_PATH") or None,
                   help="local PRM judge model (default: the policy's base model)")
    g.add_argument("--prm-url", default=None, help="OpenAI-compatible endpoint for the PRM judge")
    g.add_argument("--prm-model-name", default=None, help="model name at --prm-url")
    g.add_argument("--prm-api-key", default=os.environ.get("PRM_API_KEY") or None)
    g.add_argument("--prm-mode", choices=list(PRM_MODES), default=os.environ.get("PRM_MODE") or "auto",
                   help="local PRM judge mode (env PRM_MODE; docs/judges.md): lexical, hybrid, prototype, "
                        "channel, logprob or generate; auto (default) = the best measured mode on the embedded "
                        f"model ({DEFAULT_LOCAL_PRM_MODE}) for a builtin: judge model, {MODEL_FOLDER_PRM_MODE} "
                        "for a model folder")
    g.add_argument("--majority-vote-n", type=int, default=int(os.environ.get("MAJORITY_VOTE_N", "1")),
                   help="judge votes per turn (env MAJORITY_VOTE_N)")
    g.add_argument("--majority-vote-threshold", type=float,
                   default=float(os.environ.get("MAJORITY_VOTE_THRESHOLD", "0.5")),
                   help="fraction of valid votes the winning verdict needs, else 0 (env MAJORITY_VOTE_THRESHOLD)")
    g.add_argument("--num-judge-workers", type=int, default=2)
    g.add_argument("--rollout-timeout-s", type=float, default=None,
                   help="give up waiting for judged turns after this long (default: wait)")
    g.add_argument("--log-dir", default="logs", help="training.log, metrics JSONL, TensorBoard, plot")
    add_opd_arguments(parser)
    return parser


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    try:
        return float(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


def add_opd_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The ``opd`` group: hint judge, teacher source, advantage clip, top-K, Combine weights.

    Used with ``--advantage-estimator opd`` or ``combine``. Env fallbacks: ``JUDGE_MODEL_PATH``,
    ``OPENCLAW_COMBINE_W_OPD``, ``OPENCLAW_COMBINE_W_RL``.
    """
    g = parser.add_argument_group("opd")
    g.add_argument("--judge-model-path", default=os.environ.get("JUDGE_MODEL_PATH") or None,
                   help="local hint-judge model (env JUDGE_MODEL_PATH; default the policy's base model)")
    g.add_argument("--judge-url", default=None, help="OpenAI-compatible endpoint for the hint judge")
    g.add_argument("--judge-model-name", default=None, help="model name at --judge-url")
    g.add_argument("--judge-api-key", default=os.environ.get("JUDGE_API_KEY") or None)
    g.add_argument("--hint-mode", choices=list(HINT_MODES), default="auto",
                   help="OPD hint judge (docs/judges.md): extractive (the user's corrective sentences), model "
                        "(the judge model writes the hint: --judge-url, else structured decoding on the local "
                        f"judge model); auto (default) = {DEFAULT_HINT_MODE} for a builtin: judge model, model "
                        "for --judge-url or a model folder")
    g.add_argument("--hint-min-chars", type=int, default=15,
                   help="hints shorter than this many characters are rejected")
    g.add_argument("--hint-max-new-tokens", type=int, default=64, help="hint budget in tokens")
    g.add_argument("--hint-temperature", type=float, default=0.7, help="hint judge sampling temperature")
    g.add_argument("--opd-teacher", choices=["base", "live"], default="base",
                   help="teacher weights: the frozen base model (default) or the current policy")
    g.add_argument("--opd-adv-clip", type=float, default=None,
                   help="clip |A_t| of the OPD advantage to this value (default: no clip)")
    g.add_argument("--distill-topk", type=int, default=None,
                   help="train OPD with reverse KL over the teacher's top-K tokens plus a tail bin")
    g.add_argument("--combine-w-opd", type=float, default=None,
                   help="Combine: weight of the OPD branch (env OPENCLAW_COMBINE_W_OPD, default 1.0)")
    g.add_argument("--combine-w-rl", type=float, default=None,
                   help="Combine: weight of the Binary RL branch (env OPENCLAW_COMBINE_W_RL, default 1.0)")
    return parser


def combine_weights(extra) -> tuple[float, float]:
    """``(w_opd, w_rl)``: the flags, else ``OPENCLAW_COMBINE_W_OPD`` / ``OPENCLAW_COMBINE_W_RL``, else 1.0.

    Raises:
        ValueError: an env value that is not a number.
    """
    w_opd, w_rl = extra.get("combine_w_opd"), extra.get("combine_w_rl")
    return (_env_float("OPENCLAW_COMBINE_W_OPD", 1.0) if w_opd is None else float(w_opd),
            _env_float("OPENCLAW_COMBINE_W_RL", 1.0) if w_rl is None else float(w_rl))


def validate_openclaw(extra) -> None:
    """Check the openclaw flags.

    Raises:
        ValueError: with a one-line message.
    """
    if extra.get("majority_vote_n", 1) < 1:
        raise ValueError("--majority-vote-n must be >= 1")
    if not 0.0 <= extra.get("majority_vote_threshold", 0.5) <= 1.0:
        raise ValueError("--majority-vote-threshold must be in [0, 1]")
    if extra.get("prm_mode", "auto") not in PRM_MODES:
        raise ValueError(f"--prm-mode / PRM_MODE must be one of {', '.join(PRM_MODES)}, got {extra['prm_mode']!r}")
    if extra.get("num_judge_workers", 1) < 1:
        raise ValueError("--num-judge-workers must be >= 1")
    if extra.get("data_path"):
        if not os.path.isfile(extra["data_path"]):
            raise ValueError(f"--data-path {extra['data_path']}: no such file")
        from openclaw_rl.capture.export import read_session_file
        read_session_file(extra["data_path"])  # SessionFormatError (a ValueError) names file:line
    for flag in ("prm_model_path", "judge_model_path"):  # local paths only (not hub ids "org/name")
        path = str(extra.get(flag) or "")
        if path.startswith(("/", "./", "../", "~")) and not os.path.exists(os.path.expanduser(path)):
            raise ValueError(f"--{flag.replace('_', '-')} {path}: no such model folder")
    if extra.get("hint_min_chars", 1) < 1 or extra.get("hint_max_new_tokens", 1) < 1:
        raise ValueError("--hint-min-chars and --hint-max-new-tokens must be >= 1")
    if extra.get("opd_adv_clip") is not None and not extra["opd_adv_clip"] > 0:
        raise ValueError(f"--opd-adv-clip must be > 0, got {extra['opd_adv_clip']}")
    if extra.get("distill_topk") is not None and extra["distill_topk"] < 1:
        raise ValueError(f"--distill-topk must be >= 1, got {extra['distill_topk']}")
    for value, flag in zip(combine_weights(extra), ("--combine-w-opd", "--combine-w-rl")):
        if not value >= 0:
            raise ValueError(f"{flag} must be >= 0, got {value}")
