"""PRM judge modes: the ``--prm-mode`` values, how ``auto`` resolves, and the backend of each.

===============  ==================================================================================
mode             how the verdict is made
===============  ==================================================================================
``classifier``   a trained three-way classifier of the user's next state plus structural verdicts
                 for tool calls and results (:mod:`.classifier`, :mod:`.tool_signals`); no judge
                 model (the classifier is built on first use into the model cache)
``probe``        ``classifier``'s tool verdicts; for a user next state, a linear probe on the judge
                 model's hidden states (layers 16 and 20) mixed with the classifier's
                 probabilities, ``0`` below confidence 0.6 (:mod:`.probe`, built on first use)
``lexical``      keyword rules over the next state and its role (:mod:`.lexical`); no model
``hybrid``       ``lexical`` where a cue decides, ``prototype`` for cue-less user next states
``prototype``    nearest labelled prototype in the judge model's hidden space (:mod:`.prototype`)
``channel``      noisy channel: ``log P(next state | verdict statement)`` (:mod:`.channel`)
``logprob``      log-probability of each ``Score: v`` reply to the judge prompt (:mod:`.backends`)
``generate``     sampled judge answers parsed for ``Score: v`` (:mod:`.backends`)
``auto``         :data:`DEFAULT_LOCAL_PRM_MODE` for a built-in judge model (the best measured mode
                 there), :data:`MODEL_FOLDER_PRM_MODE` for a model folder; ``endpoint`` with
                 ``--prm-url``; :func:`build_backend` logs the choice in one line
===============  ==================================================================================

With ``--prm-url`` (or ``$PRM_URL``) an OpenAI-compatible endpoint judges instead (mode
``endpoint``: the judge prompt, answers parsed like ``generate``). Accuracy of every mode on the
extended judge case set: ``openclaw-rl judge-eval`` and ``docs/judges.md``.
"""

from __future__ import annotations

import logging
import os

from openclaw_rl.judges.backends import (LOCAL_MODES, JudgeBackend, LocalJudgeBackend, OpenAIJudgeBackend,
                                         default_prm_model_path)

__all__ = ["PRM_MODES", "DEFAULT_LOCAL_PRM_MODE", "MODEL_FOLDER_PRM_MODE", "is_builtin", "resolve_prm_mode",
           "make_local_backend", "build_backend", "HINT_MODES", "DEFAULT_HINT_MODE", "resolve_hint_mode",
           "describe_prm_choice"]

log = logging.getLogger(__name__)

#: every ``--prm-mode`` value (``auto`` resolves to one of the others, see :func:`resolve_prm_mode`)
PRM_MODES = ("auto", "classifier", "probe", "lexical", "hybrid", "prototype", "channel", "logprob", "generate")
#: what ``auto`` picks for built-in judge models: the best measured mode that needs no second model
#: (under a millisecond a turn; ``openclaw-rl judge-eval --cases openclaw_rl/judges/data/heldout_v9.jsonl``,
#: tables in docs/judges.md). ``probe`` reads user next states better on the blind sets v7-v9 (fewer
#: sign flips) at about 125 ms a turn with the judge model loaded: ``--prm-mode probe``
DEFAULT_LOCAL_PRM_MODE = "classifier"
#: the mode ``auto`` picks for a judge model folder (a checkpoint such as Qwen3-7B): a larger model
#: follows the judge prompt, which the embedded 135M model does not
MODEL_FOLDER_PRM_MODE = "logprob"


def is_builtin(model_path: str | None) -> bool:
    """True for the embedded models (``builtin:...`` names; None means the embedded default)."""
    return model_path is None or str(model_path).startswith("builtin:")


def resolve_prm_mode(mode: str | None, judge_model_path: str | None = None) -> str:
    """The local PRM mode to run.

    Args:
        mode: a :data:`PRM_MODES` value; None or ``"auto"`` means :data:`DEFAULT_LOCAL_PRM_MODE`
            (best measured without a second model) when the judge model is a built-in model, and
            :data:`MODEL_FOLDER_PRM_MODE` for a model folder.
        judge_model_path: the local judge model (``--prm-model-path`` / ``PRM_MODEL_PATH``, else
            the policy's base model).

    Raises:
        ValueError: an unknown mode.
    """
    mode = mode or "auto"
    if mode not in PRM_MODES:
        raise ValueError(f"--prm-mode must be one of {', '.join(PRM_MODES)}, got {mode!r}")
    if mode == "auto":
        return DEFAULT_LOCAL_PRM_MODE if is_builtin(judge_model_path) else MODEL_FOLDER_PRM_MODE
    return mode


def make_local_backend(mode: str, model_path: str | None = None, **kw) -> JudgeBackend:
    """The local backend of one resolved PRM mode (``classifier`` and ``lexical`` load no judge model).

    Args:
        mode: a :data:`PRM_MODES` value other than ``auto``.
        model_path: the judge model (default :func:`default_prm_model_path`).
        **kw: passed to the model backend (``vote``, ``seed``, ``model``, ``tokenizer``, ...).

    Raises:
        ValueError: unknown mode or bad settings.
    """
    from openclaw_rl.judges.channel import ChannelJudgeBackend
    from openclaw_rl.judges.classifier import ClassifierBackend
    from openclaw_rl.judges.lexical import HybridBackend, LexicalBackend
    from openclaw_rl.judges.probe import ProbeJudgeBackend
    from openclaw_rl.judges.prototype import PrototypeJudgeBackend

    if mode == "classifier":
        return ClassifierBackend()
    if mode == "lexical":
        return LexicalBackend()
    path = model_path or default_prm_model_path()
    if mode == "probe":
        return ProbeJudgeBackend(path, **kw)
    if mode == "hybrid":
        return HybridBackend(PrototypeJudgeBackend(path, **kw))
    if mode == "prototype":
        return PrototypeJudgeBackend(path, **kw)
    if mode == "channel":
        return ChannelJudgeBackend(path, **kw)
    if mode in LOCAL_MODES:
        return LocalJudgeBackend(path, mode=mode, **kw)
    raise ValueError(f"unknown PRM mode {mode!r}; choose one of {', '.join(PRM_MODES[1:])}")


def build_backend(prm_url: str | None = None, prm_model: str | None = None,
                  prm_api_key: str | None = None, model_path: str | None = None,
                  mode: str | None = None, **kw) -> JudgeBackend:
    """Pick a backend from launch settings.

    Args:
        prm_url: when set (or ``$PRM_URL``), an :class:`OpenAIJudgeBackend` on it, with model
            ``prm_model`` (or ``$PRM_MODEL``, default ``"default"``) and ``prm_api_key``; the
            local mode is then not used.
        model_path: the judge model (``--prm-model-path``, else the policy's base model); an
            explicit value always wins (None: :func:`default_prm_model_path`).
        mode: local mode (:data:`PRM_MODES`), default ``$PRM_MODE`` or ``"auto"``
            (:func:`resolve_prm_mode` on the judge model).
        **kw: more keyword arguments for the chosen backend class.

    Raises:
        ValueError: bad mode or settings (from the backend).
    """
    url = prm_url or os.environ.get("PRM_URL")
    asked = mode or os.environ.get("PRM_MODE") or "auto"
    path = model_path or default_prm_model_path()
    log.info("%s", describe_prm_choice(asked, path, url))
    if url:
        return OpenAIJudgeBackend(url, prm_model or os.environ.get("PRM_MODEL") or "default",
                                  api_key=prm_api_key, **kw)
    return make_local_backend(resolve_prm_mode(asked, path), path, **kw)


def describe_prm_choice(mode: str | None, judge_model_path: str | None, prm_url: str | None = None) -> str:
    """One line saying which PRM judge runs and why, e.g. ``PRM judge: classifier (auto: built-in judge
    model builtin:smollm2-135m; best measured mode without a second model, --prm-mode probe reads
    better, docs/judges.md)``.

    Raises:
        ValueError: an unknown mode.
    """
    if prm_url:
        return f"PRM judge: endpoint {prm_url} (--prm-url; the judge prompt, answers parsed for \\boxed{{v}} / Score: v)"
    resolved = resolve_prm_mode(mode, judge_model_path)
    if (mode or "auto") != "auto":
        return f"PRM judge: {resolved} (--prm-mode {resolved})"
    why = (f"built-in judge model {judge_model_path or 'default'}; best measured mode without a second model, "
           "--prm-mode probe reads better" if is_builtin(judge_model_path)
           else f"judge model folder {judge_model_path}; a larger model follows the judge prompt")
    return f"PRM judge: {resolved} (auto: {why}, docs/judges.md)"


#: every ``--hint-mode`` value: ``extractive`` (:mod:`.hint_extract`, no model), ``model`` (the judge
#: model writes the hint: the endpoint at ``--judge-url``, else structured decoding on the local
#: judge model, :mod:`.hint_backend`), ``auto`` (:func:`resolve_hint_mode`)
HINT_MODES = ("auto", "extractive", "model")
#: the hint mode with the best measured share of hints naming the user's preference on the
#: embedded model (docs/judges.md); ``auto`` picks it for built-in judge models
DEFAULT_HINT_MODE = "extractive"


def resolve_hint_mode(mode: str | None, judge_url: str | None = None, judge_model_path: str | None = None) -> str:
    """The hint mode to run: ``mode``, or for None / ``"auto"``: ``"model"`` when the hint judge is an
    endpoint (``--judge-url``) or a model folder (``--judge-model-path`` / ``JUDGE_MODEL_PATH``,
    else the policy's base model), :data:`DEFAULT_HINT_MODE` for a built-in model.

    Raises:
        ValueError: an unknown mode.
    """
    mode = mode or "auto"
    if mode not in HINT_MODES:
        raise ValueError(f"--hint-mode must be one of {', '.join(HINT_MODES)}, got {mode!r}")
    if mode == "auto":
        return "model" if judge_url or not is_builtin(judge_model_path) else DEFAULT_HINT_MODE
    return mode
