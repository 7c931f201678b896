"""New weights as a folder an engine server reloads from disk (``--backend vllm`` / ``sglang``).

vLLM (``reload_weights``) and SGLang (``update_weights_from_disk``) read a Hugging Face model
folder. What :meth:`openclaw_rl.engine.Engine.load_weights` accepts becomes one, checked before
any engine sees it (an engine given a bad folder can fail half-way through its reload):

* a **model folder**: its ``config.json`` must describe the served model (the structural fields of
  :func:`openclaw_rl.engine.weight_check.check_config`) and its safetensors files must open (a
  truncated file fails here) and hold every tensor of the served checkpoint with the same shape.
  Only the file headers are read, so checking a large model costs no memory;
* a **peft LoRA adapter folder** (``adapter_config.json``): merged onto the base model in this
  process, checked, and saved as a model folder *beside* the adapter (``.<name>.merged``), so an
  engine on another machine that sees the adapter through shared storage sees the merge too;
* a **state_dict**: checked against the base and saved, with the base's config, to a temporary
  folder (an engine on this machine only).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Mapping

from openclaw_rl.engine.weight_check import InvalidWeightsError, check_config, check_state_dict


def safetensors_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape over every ``*.safetensors`` file of ``folder`` (headers only).

    Raises:
        InvalidWeightsError: no safetensors file, or one that does not open (truncated, corrupt).
    """
    from safetensors import safe_open

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise InvalidWeightsError(f"{folder} has no *.safetensors weight files (engine backends load safetensors)")
    shapes: dict[str, tuple[int, ...]] = {}
    for path in files:
        try:
            with safe_open(str(path), framework="pt") as fh:
                for name in fh.keys():
                    shapes[name] = tuple(fh.get_slice(name).get_shape())
        except Exception as exc:  # SafetensorError and OSError: cannot be loaded
            raise InvalidWeightsError(f"could not open {path} (truncated or corrupt?): {exc}") from exc
    return shapes


class _Shape:
    """A stand-in with the ``.shape`` that :func:`check_state_dict` reads."""

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape


def _served_structure(base: Path):
    """The served model built on the meta device: its ``state_dict()`` names and shapes, no memory."""
    import torch
    from transformers import AutoConfig

    from openclaw_rl.models import auto_model_class

    with torch.device("meta"):
        return auto_model_class(base).from_config(AutoConfig.from_pretrained(base))


def check_model_folder(folder: Path, base: Path) -> None:
    """Check that ``folder`` holds the served model's architecture and every tensor of ``base``.

    Raises:
        InvalidWeightsError: the first problem, named.
    """
    from transformers import AutoConfig

    check_config(AutoConfig.from_pretrained(base), folder)
    served = {k: _Shape(v) for k, v in safetensors_shapes(base).items()}
    new = {k: _Shape(v) for k, v in safetensors_shapes(folder).items()}
    check_state_dict(served, new, str(folder))


def _save_model(model, tokenizer_from: Path, out: Path) -> Path:
    """Write ``model`` (safetensors) and the tokenizer files of ``tokenizer_from`` into ``out``,
    renamed into place so a reader never sees half a folder."""
    tmp = out.parent / f".tmp-{out.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
        if (tokenizer_from / name).is_file() and not (tmp / name).exists():
            shutil.copy2(tokenizer_from / name, tmp / name)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def engine_weights_folder(source: str | Mapping[str, object], base: Path) -> Path:
    """The checked model folder an engine server should reload for ``source`` (see module doc).

    Args:
        source: a model folder, a LoRA adapter folder or a state_dict (name -> tensor).
        base: the served base model's folder (``--model-path`` resolved).

    Returns:
        ``source`` itself for a model folder; a folder written here for an adapter or state_dict.

    Raises:
        InvalidWeightsError: anything that does not fit the served model, named.
    """
    import torch

    from openclaw_rl.engine.weight_check import load_checked_adapter
    from openclaw_rl.models import load_model

    if isinstance(source, Mapping):
        model = load_model(base, dtype=torch.float32)
        check_state_dict(model.state_dict(), source, "the state_dict")
        try:
            model.load_state_dict(dict(source), strict=True)
        except RuntimeError as exc:
            raise InvalidWeightsError(f"state_dict does not match the served model: {exc}") from exc
        return _save_model(model, base, Path(tempfile.mkdtemp(prefix="openclaw-rl-weights-")) / "model")
    folder = Path(source)
    if not folder.is_dir():
        raise InvalidWeightsError(f"{source!r} is not a folder")
    if (folder / "adapter_config.json").is_file():
        merged = load_checked_adapter(folder, lambda: load_model(base, dtype=torch.float32), _served_structure(base))
        return _save_model(merged, base, folder.parent / f".{folder.name}.merged")
    if (folder / "config.json").is_file():
        check_model_folder(folder, base)
        return folder
    raise InvalidWeightsError(f"{source!r} is neither a model folder (config.json) nor a LoRA "
                              "adapter folder (adapter_config.json)")
