"""Checks on new weights before an engine swaps them in.

A weight update must never break serving: the new weights are loaded completely and compared
with the served model *before* the swap, and any problem is an :class:`InvalidWeightsError`
naming it (the server answers 400 and keeps serving the old weights):

* the folder exists and holds ``config.json`` (or a LoRA ``adapter_config.json``);
* the config describes the same model: same architecture and every shape-defining field
  (:data:`STRUCTURAL_KEYS`: vocabulary size, hidden size, layers, heads, ...);
* the weight files load (a truncated or corrupt safetensors file fails here), none is missing
  (transformers would otherwise initialise missing tensors at random and only warn), and every
  tensor has the name and shape of the served one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

#: config fields that must equal the served model's (architecture and shapes)
STRUCTURAL_KEYS = ("model_type", "architectures", "vocab_size", "hidden_size", "intermediate_size",
                   "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                   "hidden_act", "tie_word_embeddings", "max_position_embeddings", "rms_norm_eps",
                   "attention_bias", "rope_theta", "rope_scaling", "rope_parameters",
                   "sliding_window", "use_sliding_window", "layer_types")


class InvalidWeightsError(ValueError):
    """New weights that do not fit the served model (the message names the problem)."""


def check_config(served_config, folder: Path) -> None:
    """Compare ``folder/config.json`` with the served model's config.

    Raises:
        InvalidWeightsError: missing or unreadable config, or a structural field differs.
    """
    from transformers import AutoConfig

    path = folder / "config.json"
    if not path.is_file():
        raise InvalidWeightsError(f"{folder} has no config.json")
    try:
        new = AutoConfig.from_pretrained(folder).to_dict()
    except Exception as exc:  # JSON errors, unknown model types
        raise InvalidWeightsError(f"{path} is not a readable model config: {exc}") from exc
    served = served_config.to_dict()
    for key in STRUCTURAL_KEYS:
        a, b = served.get(key), new.get(key)
        if a != b:
            what = "architecture" if key in ("model_type", "architectures") else key
            raise InvalidWeightsError(f"{what} {b!r} in {path} differs from the served model's {a!r}")


def check_state_dict(served: Mapping[str, object], new: Mapping[str, object], where: str) -> None:
    """Same tensor names and shapes as the served model.

    Raises:
        InvalidWeightsError: the first few missing, unexpected or differently shaped tensors.
    """
    missing = [k for k in served if k not in new]
    extra = [k for k in new if k not in served]
    shapes = [f"{k} {tuple(new[k].shape)} vs served {tuple(served[k].shape)}"
              for k in served if k in new and tuple(new[k].shape) != tuple(served[k].shape)]
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing tensor(s) ({', '.join(missing[:3])})")
    if extra:
        problems.append(f"{len(extra)} unexpected tensor(s) ({', '.join(extra[:3])})")
    if shapes:
        problems.append(f"{len(shapes)} tensor(s) of another shape ({'; '.join(shapes[:3])})")
    if problems:
        raise InvalidWeightsError(f"weights in {where} do not match the served model: " + ", ".join(problems))


def load_checked_model(folder: Path, served_model, dtype):
    """Load a full model folder and check it against ``served_model`` (see module doc).

    Returns:
        The new model (eval mode, on CPU; the caller moves it).

    Raises:
        InvalidWeightsError: any problem, named.
    """
    from openclaw_rl.models import auto_model_class

    check_config(served_model.config, folder)
    files = sorted(p.name for p in folder.iterdir() if p.suffix in (".safetensors", ".bin"))
    if not files:
        raise InvalidWeightsError(f"{folder} has no weight files (*.safetensors or *.bin)")
    try:
        model, info = auto_model_class(folder).from_pretrained(folder, dtype=dtype, output_loading_info=True)
    except Exception as exc:  # safetensors/torch/transformers errors all mean "cannot load"
        raise InvalidWeightsError(f"could not load the weights in {folder} ({', '.join(files)}; truncated "
                                  f"or corrupt?): {type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    missing = list(info.get("missing_keys") or [])
    mismatched = list(info.get("mismatched_keys") or [])
    if missing or mismatched:
        names = [str(k) for k in (missing + mismatched)[:3]]
        raise InvalidWeightsError(f"weights in {folder} are incomplete: {len(missing)} missing and "
                                  f"{len(mismatched)} mismatched tensor(s) ({', '.join(names)})")
    check_state_dict(served_model.state_dict(), model.state_dict(), str(folder))
    return model.eval()


def load_checked_adapter(folder: Path, base_factory, served_model):
    """Merge a peft LoRA adapter onto a fresh base model and check the result.

    Args:
        folder: the adapter folder (``adapter_config.json``).
        base_factory: returns a fresh copy of the base model.
        served_model: the model served now (shapes to match).

    Raises:
        InvalidWeightsError: the adapter does not load onto the base model (another model's
            adapter, a truncated file), named.
    """
    from peft import PeftModel

    try:
        merged = PeftModel.from_pretrained(base_factory(), folder).merge_and_unload().eval()
    except Exception as exc:
        raise InvalidWeightsError(f"could not load the LoRA adapter in {folder}: "
                                  f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    check_state_dict(served_model.state_dict(), merged.state_dict(), str(folder))
    return merged
