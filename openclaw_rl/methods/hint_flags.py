"""Flags shared by OPD and Combine: the hint judge and the hinted teacher."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from slime.config.flags import ConfigError, flag

__all__ = ["HintFlags", "check_local_model"]


@dataclass(frozen=True)
class HintFlags:
    """Hint judge (``--judge-*``, ``--hint-*``) and teacher (``--opd-*``) flags."""

    judge_model_path: str | None = flag(None, "local hint-judge model", env="JUDGE_MODEL_PATH", path="model",
                                        default_text="the policy's base model")
    judge_url: str | None = flag(None, "OpenAI-compatible endpoint for the hint judge (instead of a local model)")
    judge_model_name: str | None = flag(None, "model name at --judge-url", default_text="default")
    judge_api_key: str | None = flag(None, "API key of --judge-url", env="JUDGE_API_KEY")
    hint_mode: Literal["auto", "extractive", "model"] = flag(
        "auto", "OPD hint judge (docs/judges.md): extractive (the user's corrective sentences, no model), model "
        "(the judge model writes the hint: --judge-url, else structured decoding on the local judge model); auto = "
        "extractive for a builtin: judge model, model for --judge-url or a model folder")
    hint_min_chars: int = flag(15, "hints shorter than this many characters are rejected", ge=1)
    hint_max_new_tokens: int = flag(64, "hint budget in tokens (local and --judge-url judges)", ge=1)
    hint_temperature: float = flag(0.7, "hint judge sampling temperature", ge=0)
    opd_teacher: Literal["base", "live"] = flag("base", "teacher weights: the frozen base model or the current "
                                                "policy")
    opd_adv_clip: float | None = flag(None, "clip |A_t| of the OPD advantage to this value", gt=0,
                                      default_text="no clip")


def check_local_model(option: str, path: Any) -> None:
    """Refuse a local model path (``/``, ``./``, ``../``, ``~``) that does not exist; hub-style
    ids and registered names pass. Raises :class:`ConfigError`."""
    import os

    text = str(path or "")
    if text.startswith(("/", "./", "../", "~")) and not os.path.exists(os.path.expanduser(text)):
        raise ConfigError(f"{option} {text}: no such model folder")
