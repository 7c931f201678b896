"""Command-line flags of the OpenClaw methods (added to slime's parser as an argument group).

Environment fallbacks follow the seed's launch scripts: ``PRM_MODEL_PATH``, ``DATA_PATH``,
``MAJORITY_VOTE_N``, ``MAJORITY_VOTE_THRESHOLD``, ``OPENCLAW_API_KEY``, ``OPENCLAW_PORT``.
"""

from __future__ import annotations

import argparse
import os


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
    g.add_argument("--prm-mode", choices=["logprob", "generate"], default="logprob",
                   help="local judge: score verdicts by log-probability (default) or generate them")
    g.add_argument("--majority-vote-n", type=int, default=int(os.environ.get("MAJORITY_VOTE_N", "1")),
                   help="judge votes per turn (env MAJORITY_VOTE_N)")
    g.add_argument("--majority-vote-threshold", type=float,
                   default=float(os.environ.get("MAJORITY_VOTE_THRESHOLD", "0.5")),
                   help="fraction of valid votes the winning verdict needs, else 0 (env MAJORITY_VOTE_THRESHOLD)")
    g.add_argument("--num-judge-workers", type=int, default=2)
    g.add_argument("--rollout-timeout-s", type=float, default=None,
                   help="give up waiting for judged turns after this long (default: wait)")
    g.add_argument("--log-dir", default="logs", help="training.log, metrics JSONL, TensorBoard, plot")
    return parser


def validate_openclaw(extra) -> None:
    """Check the openclaw flags.

    Raises:
        ValueError: with a one-line message.
    """
    if extra.get("majority_vote_n", 1) < 1:
        raise ValueError("--majority-vote-n must be >= 1")
    if not 0.0 <= extra.get("majority_vote_threshold", 0.5) <= 1.0:
        raise ValueError("--majority-vote-threshold must be in [0, 1]")
    if extra.get("num_judge_workers", 1) < 1:
        raise ValueError("--num-judge-workers must be >= 1")
    if extra.get("data_path") and not os.path.isfile(extra["data_path"]):
        raise ValueError(f"--data-path {extra['data_path']}: no such file")
