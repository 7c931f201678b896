"""Model paths and loading for the trainer.

``--model-path`` is a Hugging Face folder, or ``<scheme>:<name>`` resolved by a model resolver
that an installed package registers (entry points ``slime.model_resolvers``; OpenClaw-RL
registers ``builtin`` for ``builtin:smollm2-135m`` and ``builtin:tiny-qwen3``). The core names
no scheme itself.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from slime.plugins.registry import MODEL_RESOLVERS, entry_names, load_entry

__all__ = ["check_model_path", "load_model", "load_tokenizer", "resolve_model_path"]


def resolve_model_path(model_path: str | os.PathLike) -> str:
    """The local folder of ``model_path``: a registered scheme's resolver result, else the path.

    Raises:
        whatever the resolver raises for a name it does not know (a ``ValueError``).
    """
    text = str(model_path)
    scheme, sep, _ = text.partition(":")
    if sep and scheme in entry_names(MODEL_RESOLVERS) and not Path(text).exists():
        return str(load_entry(MODEL_RESOLVERS, scheme)(text))
    return text


def check_model_path(model_path: str | os.PathLike) -> str:
    """Resolve ``--model-path`` before anything starts; returns the folder (or hub id).

    A registered scheme's name is resolved (a built-in model is prepared once and cached, so the
    actors find it ready); a local path must be a model folder (``config.json``) or a LoRA
    checkpoint (``adapter_config.json``). A Hugging Face hub id (``org/name``, not a path) is left
    to ``from_pretrained``.

    Raises:
        ValueError: one line naming the flag and what is wrong (whatever the resolver raised for
            a name it does not know, a path that does not exist or holds no model).
    """
    text = str(model_path)
    try:
        folder = resolve_model_path(text)
    except (ValueError, OSError) as exc:
        raise ValueError(f"--model-path {text}: {exc}") from None
    path = Path(folder).expanduser()
    looks_local = path.is_absolute() or text.startswith((".", "~")) or path.exists()
    if looks_local and not ((path / "config.json").is_file() or (path / "adapter_config.json").is_file()):
        what = "no such folder" if not path.exists() else "not a model folder (no config.json or adapter_config.json)"
        raise ValueError(f"--model-path {text}: {what}")
    return str(folder)


#: the tokenizers this process loaded: (folder, its tokenizer files' stamp) -> tokenizer
_TOKENIZERS: dict[tuple[str, tuple], Any] = {}
_TOKENIZERS_LOCK = threading.Lock()
#: the files ``AutoTokenizer`` reads from a folder (a change to any of them loads it again)
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                    "vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja", "chat_template.json")


def _tokenizer_stamp(folder: str) -> tuple:
    """``(name, mtime_ns, size)`` of each tokenizer file in ``folder`` (empty for a hub id)."""
    out = []
    for name in _TOKENIZER_FILES:
        try:
            st = os.stat(os.path.join(folder, name))
        except OSError:
            continue
        out.append((name, st.st_mtime_ns, st.st_size))
    return tuple(out)


def load_tokenizer(model_path: str | os.PathLike) -> Any:
    """The tokenizer of ``model_path`` (transformers ``AutoTokenizer``), loaded once per process.

    A Qwen-vocabulary tokenizer takes about 1.2 CPU-seconds to load (``tokenizer.json`` is parsed
    twice, once in Python), and a process asks for the same one from several places (the judge,
    the teacher, the text turns of the rollout; a test process for many tests). Every caller gets
    the same object while the folder's tokenizer files are unchanged (their modification times
    and sizes); a changed file loads it again. Thread-safe.

    The object is shared: read it (encode, decode, chat templates), do not change it (its
    ``chat_template``, special tokens, padding or truncation); ``copy.copy`` it first.

    Raises:
        whatever ``resolve_model_path`` and ``AutoTokenizer.from_pretrained`` raise (``OSError``
        for a folder without a tokenizer, ``ValueError`` for an unknown ``builtin:`` name).
    """
    from transformers import AutoTokenizer

    folder = resolve_model_path(model_path)
    key = (folder, _tokenizer_stamp(folder))
    with _TOKENIZERS_LOCK:
        tokenizer = _TOKENIZERS.get(key)
        if tokenizer is None:
            tokenizer = _TOKENIZERS[key] = AutoTokenizer.from_pretrained(folder)
    return tokenizer


def load_model(model_path: str | os.PathLike, dtype: Any = None) -> Any:
    """A causal LM in eval mode from ``model_path`` (default dtype float32): a vision-language
    model (``config.json`` with a ``vision_config``, e.g. Qwen2-VL) through
    ``AutoModelForImageTextToText``, any other through ``AutoModelForCausalLM``."""
    import json

    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    folder = resolve_model_path(model_path)
    try:
        vision = "vision_config" in json.loads((Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        vision = False
    auto = AutoModelForImageTextToText if vision else AutoModelForCausalLM
    return auto.from_pretrained(folder, dtype=dtype or torch.float32).eval()
