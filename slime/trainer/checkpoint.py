"""Write and load checkpoints in Hugging Face format, with optimizer and trainer state, resumable
after a crash. The layout, the names and finding a checkpoint are in
:mod:`slime.trainer.checkpoint_layout` (no torch); its names are re-exported here.

Crash safety: a checkpoint is written into ``.tmp-checkpoint-<step>-<pid>`` and renamed into
place only when complete; ``checkpoint-latest`` is then re-pointed atomically (a new symlink is
created beside it and ``os.replace``-d over it). A crash leaves either the old or the new latest,
never a half-written one. A symlink (not a copy) keeps saves cheap; every ``checkpoint-<step>``
directory is itself a complete Hugging Face checkpoint, so ``checkpoint-latest`` can be handed to
``from_pretrained`` or an inference engine directly.

Follows the Hugging Face Trainer's ``checkpoint-<step>`` convention and slime's
``--save``/``--save-interval``/resume semantics (THUDM/slime).
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from slime.orchestration.fault_points import reached
from slime.trainer.checkpoint_layout import (LATEST_NAME, OPTIMIZER_FILE, RUN_CONFIG, STATE_FILE, TrainerState,
                                             find_checkpoint_of_version, find_latest_checkpoint,
                                             resolve_checkpoint_dir, resume_point, resume_step, step_dirs)

__all__ = [  # the layout's names too (slime.trainer.checkpoint_layout), as before the split
    "LATEST_NAME",
    "OPTIMIZER_FILE",
    "RUN_CONFIG",
    "STATE_FILE",
    "find_checkpoint_of_version",
    "step_dirs",
    "TrainerState",
    "capture_rng_state",
    "find_latest_checkpoint",
    "resolve_checkpoint_dir",
    "resume_point",
    "resume_step",
    "load_checkpoint",
    "checkpoint_model_state",
    "restore_rng_state",
    "save_checkpoint",
]


def capture_rng_state() -> dict[str, Any]:
    """Snapshot python ``random``, torch CPU (and CUDA, if initialised) RNG states as a JSON-safe dict."""
    state: dict[str, Any] = {
        "python": _to_jsonable(random.getstate()),
        "torch": base64.b64encode(torch.get_rng_state().numpy().tobytes()).decode("ascii"),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = [base64.b64encode(s.numpy().tobytes()).decode("ascii") for s in torch.cuda.get_rng_state_all()]
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Restore RNG states captured by :func:`capture_rng_state` (CUDA only when present in both)."""
    random.setstate(_from_jsonable(state["python"]))
    torch.set_rng_state(torch.frombuffer(bytearray(base64.b64decode(state["torch"])), dtype=torch.uint8))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(
            [torch.frombuffer(bytearray(base64.b64decode(s)), dtype=torch.uint8) for s in state["cuda"]]
        )


def _to_jsonable(x: Any) -> Any:
    return [_to_jsonable(v) for v in x] if isinstance(x, (tuple, list)) else x


def _from_jsonable(x: Any) -> Any:
    return tuple(_from_jsonable(v) for v in x) if isinstance(x, list) else x


def _is_peft(model: torch.nn.Module) -> bool:
    try:
        from peft import PeftModel
    except ImportError:  # pragma: no cover - peft is a hard dependency
        return False
    return isinstance(model, PeftModel)


def save_checkpoint(
    save_dir: str | os.PathLike,
    state: TrainerState,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    tokenizer: Any = None,
    *,
    keep_last: int | None = None,
    model_state: dict[str, torch.Tensor] | None = None,
    optimizer_state: dict[str, Any] | None = None,
    extra_files: Sequence[Path] = (),
) -> Path:
    """Write ``save_dir/checkpoint-<state.step>`` atomically and point ``checkpoint-latest`` at it.

    Args:
        save_dir: the ``--save`` directory (created if missing).
        state: trainer state; ``rng_state`` is filled with :func:`capture_rng_state` if ``None``.
        model: a ``transformers`` ``PreTrainedModel`` (full weights, safetensors) or a peft model
            (adapter only).
        optimizer: saved to ``optimizer.pt`` when given.
        tokenizer: saved with ``save_pretrained`` when given.
        keep_last: when set (>= 1), delete older ``checkpoint-<step>`` directories beyond the newest
            ``keep_last``.
        model_state: the weights to write instead of ``model``'s own (the unsharded state of a
            data-parallel model, :meth:`slime.trainer.data_parallel.DataParallel.full_model_state`).
        optimizer_state: what to write to ``optimizer.pt`` instead of ``optimizer.state_dict()``.
        extra_files: files copied into the checkpoint as they are (a vision-language model's
            image-processor configs, so the checkpoint folder serves images as the base did).

    Returns:
        Path of the finished ``checkpoint-<step>`` directory.

    Raises:
        ValueError: ``state.step < 0`` or ``keep_last < 1``. ``OSError`` from the filesystem.
    """
    if state.step < 0:
        raise ValueError(f"step must be >= 0, got {state.step}")
    if keep_last is not None and keep_last < 1:
        raise ValueError(f"keep_last must be >= 1, got {keep_last}")
    root = Path(save_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"checkpoint-{state.step}"
    tmp = root / f".tmp-checkpoint-{state.step}-{os.getpid()}"
    for stale in root.glob(f".tmp-checkpoint-{state.step}-*"):  # left by a trainer killed mid-save
        shutil.rmtree(stale, ignore_errors=True)
    if state.rng_state is None:
        state = TrainerState(state.step, state.weight_version, state.data_cursor, capture_rng_state(), dict(state.extra))

    if model_state is not None:
        model.save_pretrained(str(tmp), state_dict=model_state, safe_serialization=True)
    else:
        model.save_pretrained(str(tmp), safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(tmp))
    for path in extra_files:
        shutil.copy2(path, tmp / Path(path).name)
    if optimizer_state is not None or optimizer is not None:
        torch.save(optimizer_state if optimizer_state is not None else optimizer.state_dict(), tmp / OPTIMIZER_FILE)
    (tmp / STATE_FILE).write_text(state.to_json())
    reached("save_written", state.step)  # a fault test may kill the trainer here (slime.orchestration.fault_points)

    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    link_tmp = root / f".tmp-latest-{os.getpid()}"
    if link_tmp.is_symlink() or link_tmp.exists():
        link_tmp.unlink()
    os.symlink(final.name, link_tmp)
    os.replace(link_tmp, root / LATEST_NAME)

    if keep_last is not None:
        for old in step_dirs(root)[:-keep_last]:
            if old != final:  # never delete what checkpoint-latest now points at
                shutil.rmtree(old)
    return final


def _load_safetensors_dir(ckpt: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    index = ckpt / "model.safetensors.index.json"
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    state: dict[str, torch.Tensor] = {}
    for name in files:
        if not (ckpt / name).is_file():
            raise FileNotFoundError(f"missing weight file {ckpt / name}")
        state.update(load_file(str(ckpt / name)))
    return state


def _load_full_weights(model: torch.nn.Module, ckpt: Path) -> None:
    state = _load_safetensors_dir(ckpt)
    result = model.load_state_dict(state, strict=False)
    if result.unexpected_keys:
        raise ValueError(f"checkpoint {ckpt} has unexpected weights: {result.unexpected_keys[:5]}")
    # save_pretrained drops tied weights (e.g. lm_head tied to embed_tokens): those may be missing.
    params = dict(model.named_parameters(remove_duplicate=False))
    loaded_ptrs = {params[k].data_ptr() for k in state if k in params}
    untied = [k for k in result.missing_keys if k not in params or params[k].data_ptr() not in loaded_ptrs]
    if untied:
        raise ValueError(f"checkpoint {ckpt} lacks weights: {untied[:5]}")


def _load_adapter_weights(model: torch.nn.Module, ckpt: Path) -> None:
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    path = ckpt / "adapter_model.safetensors"
    if not path.is_file():
        raise FileNotFoundError(f"missing LoRA adapter {path}")
    result = set_peft_model_state_dict(model, load_file(str(path)))
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ValueError(f"adapter {path} has unexpected weights: {unexpected[:5]}")
    missing = [k for k in getattr(result, "missing_keys", []) if "lora_" in k]
    if missing:
        raise ValueError(f"adapter {path} lacks LoRA weights: {missing[:5]}")


def load_checkpoint(
    path: str | os.PathLike,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    *,
    restore_rng: bool = True,
) -> TrainerState:
    """Restore weights (and optimizer, RNG) in place from a checkpoint; return its :class:`TrainerState`.

    Args:
        path: a ``checkpoint-<step>`` directory, or a save directory (its latest checkpoint is used).
        model: the model to load into, built with the same architecture (a peft model for a LoRA
            checkpoint: only the adapter weights are restored).
        optimizer: loaded from ``optimizer.pt`` when given (``ValueError`` if the file is absent).
        restore_rng: restore python/torch RNG from ``trainer_state.json``.

    Raises:
        FileNotFoundError: no checkpoint found, or a weight file missing.
        ValueError: weights do not match the model, or the optimizer state is missing.
    """
    ckpt = resolve_checkpoint_dir(path)
    state = TrainerState.from_json((ckpt / STATE_FILE).read_text())
    if _is_peft(model):
        _load_adapter_weights(model, ckpt)
    else:
        _load_full_weights(model, ckpt)
    if optimizer is not None:
        opt_path = ckpt / OPTIMIZER_FILE
        if not opt_path.is_file():
            raise ValueError(f"checkpoint {ckpt} has no {OPTIMIZER_FILE}")
        optimizer.load_state_dict(torch.load(opt_path, map_location="cpu", weights_only=True))
    if restore_rng and state.rng_state:
        restore_rng_state(state.rng_state)
    return state


def checkpoint_model_state(ckpt: str | os.PathLike, model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights of checkpoint folder ``ckpt`` keyed by ``model``'s own state-dict names, for a
    model that cannot ``load_state_dict`` plain tensors (a data-parallel one, sharded by FSDP2:
    :meth:`slime.trainer.data_parallel.DataParallel.load_model_state` loads the result).

    Full weights: the safetensors files as they are. A peft model: the adapter's LoRA weights,
    with the adapter name put back into each key (peft's own naming: ``...lora_A.weight`` in the
    file is ``...lora_A.<adapter>.weight`` in the model).

    Raises:
        FileNotFoundError: a weight file is missing.
        ValueError: weights the model has no place for, or trainable weights the file lacks
            (tied weights excepted).
    """
    ckpt = Path(ckpt)
    names = set(model.state_dict())
    if _is_peft(model):
        from safetensors.torch import load_file

        path = ckpt / "adapter_model.safetensors"
        if not path.is_file():
            raise FileNotFoundError(f"missing LoRA adapter {path}")
        adapter = str(model.active_adapter)
        where = {k.replace(f".{adapter}", ""): k for k in names if "lora_" in k}
        loaded = load_file(str(path))
        unexpected = [k for k in loaded if k not in where]
        missing = [k for k in where if k not in loaded]
        if unexpected or missing:
            raise ValueError(f"adapter {path} does not match the model: unexpected {unexpected[:5]}, "
                             f"lacks {missing[:5]}")
        return {where[k]: v for k, v in loaded.items()}
    state = _load_safetensors_dir(ckpt)
    unexpected = [k for k in state if k not in names]
    if unexpected:
        raise ValueError(f"checkpoint {ckpt} has unexpected weights: {unexpected[:5]}")
    by_id: dict[int, list[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        by_id.setdefault(id(param), []).append(name)
    lacking = [names_[0] for names_ in by_id.values() if not any(n in state for n in names_)]
    if lacking:
        raise ValueError(f"checkpoint {ckpt} lacks weights: {lacking[:5]}")
    return state
