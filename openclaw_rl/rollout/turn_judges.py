"""Building the live turn judges from a run's flags: the PRM (Binary RL, and the service's
default judge) and the OPD hint judge.

The judges themselves live in :mod:`openclaw_rl.judges`; the turn-level wrappers the judge loop
calls are :class:`PRMTurnJudge` here and :mod:`openclaw_rl.opd.judge` (OPD, Combine).
"""

from __future__ import annotations

import os
from typing import Any

from openclaw_rl.rollout.flags import OpenClawFlags
from openclaw_rl.rollout.judge_loop import JudgeResult

__all__ = ["PRMTurnJudge", "build_hint_judge", "build_prm"]


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


def build_prm(cfg: Any):
    """The PRM of a run: ``--prm-url`` (OpenAI-compatible), else a local model
    (``--prm-model-path``, default the policy's base model ``--model-path``).

    Returns:
        A :class:`openclaw_rl.judges.prm.PRMJudge`.
    """
    from openclaw_rl.judges.modes import build_backend
    from openclaw_rl.judges.prm import PRMJudge

    from openclaw_rl.rollout.devices import prm_device

    x: OpenClawFlags = cfg.flags_of("service", OpenClawFlags)
    device = None if (x.prm_url or os.environ.get("PRM_URL")) else prm_device(cfg)
    import torch
    on_gpu = {"device": device, "dtype": torch.bfloat16} if device else {}  # a local model on its GPU
    backend = build_backend(prm_url=x.prm_url, prm_model=x.prm_model_name, prm_api_key=x.prm_api_key,
                            model_path=x.prm_model_path or cfg.model_path, mode=x.prm_mode, **on_gpu)
    return PRMJudge(backend, majority_vote_n=x.majority_vote_n, threshold=x.majority_vote_threshold,
                    num_workers=x.num_judge_workers)


def build_hint_judge(cfg: Any, hint: Any, prm: Any = None):
    """The OPD hint judge, by ``--hint-mode`` (:func:`openclaw_rl.judges.modes.resolve_hint_mode`):
    ``extractive`` (the user's corrective sentences, no model); ``model``: ``--judge-url``, else a
    local model with structured decoding (``--judge-model-path``, default the policy's base model;
    it shares the PRM's loaded weights when both are the same local model).

    Args:
        cfg: the run's config (service flags: ``--majority-vote-n``).
        hint: the method's flags (:class:`openclaw_rl.methods.hint_flags.HintFlags`).
        prm: the run's PRM judge, if any (weight sharing).

    Returns:
        A :class:`openclaw_rl.judges.hints.HintJudge`.
    """
    from openclaw_rl.judges.backends import OpenAIJudgeBackend
    from openclaw_rl.judges.hint_backend import StructuredHintBackend
    from openclaw_rl.judges.hints import HintJudge
    from openclaw_rl.judges.modes import resolve_hint_mode

    x: OpenClawFlags = cfg.flags_of("service", OpenClawFlags)
    mode = resolve_hint_mode(hint.hint_mode, hint.judge_url, hint.judge_model_path or cfg.model_path)
    if mode == "extractive":
        from openclaw_rl.judges.hint_extract import ExtractiveHintBackend
        backend = ExtractiveHintBackend()
    elif hint.judge_url:
        backend = OpenAIJudgeBackend(hint.judge_url, hint.judge_model_name or "default", api_key=hint.judge_api_key,
                                     max_tokens=hint.hint_max_new_tokens, temperature=hint.hint_temperature)
    else:
        import torch

        from openclaw_rl.rollout.devices import prm_device
        path = hint.judge_model_path or cfg.model_path
        shared = getattr(getattr(prm, "backend", None), "model_path", None) == str(path)
        device = None if shared else prm_device(cfg)  # its own model: on the PRM/teacher GPU, bf16
        backend = StructuredHintBackend(path, max_new_tokens=hint.hint_max_new_tokens,
                                        model=prm.backend.model if shared else None,
                                        tokenizer=prm.backend.tokenizer if shared else None,
                                        temperature=hint.hint_temperature,
                                        **({"device": device, "dtype": torch.bfloat16} if device else {}))
    return HintJudge(backend, majority_vote_n=x.majority_vote_n, min_chars=hint.hint_min_chars)
