"""Checkpoint and export I/O of :class:`slime.trainer.backend.TrainingBackend` (a mixin).

:meth:`save` / :meth:`load` go through :mod:`slime.trainer.checkpoint`; :meth:`export_weights` writes what
the serving engine's ``load_weights(path)`` accepts: a full Hugging Face model folder, or for LoRA
the peft adapter folder only.

With data parallelism (``data_parallel`` set: the model is sharded over the train ranks) each of
them is a collective every rank calls: the unsharded weights and optimizer state are gathered to
rank 0, which alone writes ONE folder in the single-process format (so any number of ranks
resumes it), and every rank loads its shards from that folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import torch

from slime.trainer.checkpoint import (OPTIMIZER_FILE, STATE_FILE, TrainerState, checkpoint_model_state,
                              find_latest_checkpoint, load_checkpoint, resolve_checkpoint_dir, restore_rng_state,
                              save_checkpoint)
from slime.trainer.tokenizer_files import SavedTokenizer


#: a vision-language model folder's processor files, carried into checkpoints and exports
PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json", "video_preprocessor_config.json")


def processor_files(model_folder: str | os.PathLike | None) -> tuple[Path, ...]:
    """The :data:`PROCESSOR_FILES` present in ``model_folder`` (none for a text model or None)."""
    if model_folder is None or not Path(model_folder).is_dir():
        return ()
    return tuple(Path(model_folder) / name for name in PROCESSOR_FILES if (Path(model_folder) / name).is_file())


class BackendIOMixin:
    """Needs ``model``, ``optimizer``, ``trainable_parameters``, ``initial_weights``, ``tokenizer``,
    ``is_lora``, ``step``, ``weight_version``, ``data_parallel``, ``offload_active`` and
    ``_optimizer_state_to`` from the class it is mixed into; ``processor_files`` (the model folder's image-processor configs, copied into full-model
    checkpoints and exports so they serve images as the base did) is optional."""

    processor_files: tuple[Path, ...] = ()
    _saved_tokenizer: SavedTokenizer | None = None

    def save(self, save_dir: str | os.PathLike, step: int | None = None,
             data_cursor: int | str | None = None, *, keep_last: int | None = None,
             extra: dict[str, Any] | None = None) -> Path:
        """Write ``save_dir/checkpoint-<step>`` (model or LoRA adapter, optimizer, trainer state).

        Args:
            save_dir: the ``--save`` directory.
            step: checkpoint step; default this backend's optimizer step count.
            data_cursor: id of the last consumed store record, restored by :meth:`load`.
            keep_last: prune older checkpoints (see :func:`slime.trainer.checkpoint.save_checkpoint`).
            extra: JSON-safe dict stored in ``trainer_state.json``.

        Returns:
            The checkpoint directory (``checkpoint-latest`` points at it).
        """
        if self.offload_active:  # torch.save the state from host memory either way
            self._optimizer_state_to(torch.device("cpu"))
        state = TrainerState(step=self.step if step is None else int(step), weight_version=self.weight_version,
                             data_cursor=data_cursor, extra=dict(extra or {}))
        dp = self.data_parallel
        if dp is None:
            return save_checkpoint(save_dir, state, self.model, self.optimizer, self._tokenizer_files(), keep_last=keep_last,
                                   extra_files=self._carried_files())
        weights = dp.full_model_state(self.model, trainable_only=self.is_lora)
        optimizer_state = dp.full_optimizer_state(self.model, self.optimizer)
        path = Path(save_dir) / f"checkpoint-{state.step}"
        if dp.rank == 0:
            path = save_checkpoint(save_dir, state, self.model, None, self._tokenizer_files(), keep_last=keep_last,
                                   model_state=weights, optimizer_state=optimizer_state,
                                   extra_files=self._carried_files())
        dp.barrier()  # no rank returns before the folder is complete
        return path

    def _tokenizer_files(self) -> SavedTokenizer | None:
        """``self.tokenizer``'s files, written once and copied into each checkpoint and export
        (:class:`~slime.trainer.tokenizer_files.SavedTokenizer`); None without a tokenizer."""
        if self.tokenizer is None:
            return None
        if self._saved_tokenizer is None or self._saved_tokenizer.tokenizer is not self.tokenizer:
            self._saved_tokenizer = SavedTokenizer(self.tokenizer)
        return self._saved_tokenizer

    def _carried_files(self) -> tuple[Path, ...]:
        """The processor files a full-model folder gets (none for a LoRA adapter)."""
        return () if self.is_lora else tuple(self.processor_files)

    def load(self, path: str | os.PathLike, *, restore_rng: bool = True) -> TrainerState:
        """Restore weights (or the LoRA adapter), optimizer state and RNG from a checkpoint.

        Args:
            path: a ``checkpoint-<step>`` directory or a save directory (its latest checkpoint).

        Returns:
            The checkpoint's :class:`TrainerState`; ``weight_version`` and ``step`` are set from it.

        Raises:
            FileNotFoundError / ValueError: see :func:`slime.trainer.checkpoint.load_checkpoint`.
        """
        if self.data_parallel is None:
            state = load_checkpoint(path, self.model, self.optimizer, restore_rng=restore_rng)
        else:  # every rank reads the one folder and keeps its shards
            ckpt = resolve_checkpoint_dir(path)
            state = TrainerState.from_json((ckpt / STATE_FILE).read_text())
            self.data_parallel.load_model_state(self.model, checkpoint_model_state(ckpt, self.model))
            if not (ckpt / OPTIMIZER_FILE).is_file():
                raise ValueError(f"checkpoint {ckpt} has no {OPTIMIZER_FILE}")
            self.data_parallel.load_optimizer_state(self.model, self.optimizer, torch.load(
                ckpt / OPTIMIZER_FILE, map_location="cpu", weights_only=True))
            if restore_rng and state.rng_state:
                restore_rng_state(state.rng_state)
        if self.offload_active:
            self._optimizer_state_to(torch.device("cpu"))
        self.weight_version = int(state.weight_version)
        self.step = int(state.step)
        return state

    def restore_last_good(self, save_dir: str | os.PathLike | None,
                          checkpoint: str | os.PathLike | None = None) -> dict[str, Any]:
        """Go back to the last good weights: the newest checkpoint under ``save_dir``
        (:func:`slime.trainer.checkpoint.find_latest_checkpoint`; weights and optimizer state, RNG left
        alone), or, when there is none (or ``save_dir`` is None), the weights the run started with
        (``initial_weights``, taken when the backend was built) with the optimizer state reset.

        ``checkpoint`` names the checkpoint to restore instead of the newest (a rollback of serving
        to an older version, :meth:`slime.orchestration.ray_actors.TrainActor.restore_version`).

        The learning rate in use is kept (a checkpoint's own is not restored; a collapse rollback
        lowers it after this). ``step`` keeps its count and ``weight_version`` goes UP by one past
        both the current and the checkpoint's version, so a version number is never reused.

        Returns:
            ``{"restored": checkpoint path or "initial", "step": ..., "weight_version": ...}``.

        Raises:
            FileNotFoundError / ValueError: the checkpoint does not load (see :meth:`load`).
        """
        version, step = int(self.weight_version), int(self.step)
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        ckpt = Path(checkpoint) if checkpoint is not None else (find_latest_checkpoint(save_dir) if save_dir else None)
        if ckpt is not None:
            self.load(ckpt, restore_rng=False)
            restored = str(ckpt)
        else:
            with torch.no_grad():
                for p, w in zip(self.trainable_parameters, self.initial_weights):
                    p.copy_(w)
            self.optimizer.state.clear()  # AdamW starts its moments afresh
            restored = "initial"
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self.weight_version = max(version, int(self.weight_version)) + 1
        self.step = step
        return {"restored": restored, "step": self.step, "weight_version": self.weight_version}

    def export_weights(self, out_dir: str | os.PathLike) -> Path:
        """Write the current weights for the serving engine (``Engine.load_weights(path)``).

        Full model: a Hugging Face folder (``save_pretrained`` safetensors + tokenizer when
        known). LoRA: the peft adapter folder only (``adapter_config.json`` +
        ``adapter_model.safetensors``); the engine merges it onto its own base model, so the base
        must be the ``--model-path`` this backend started from.

        The folder is written beside ``out_dir`` and renamed into place, so a reader never sees
        a half-written export; an existing ``out_dir`` is replaced.

        Returns:
            ``out_dir`` as a :class:`~pathlib.Path`.
        """
        out = Path(out_dir)
        dp = self.data_parallel
        weights = None if dp is None else dp.full_model_state(self.model, trainable_only=self.is_lora)
        if dp is not None and dp.rank != 0:
            dp.barrier()  # rank 0 writes
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.parent / f".tmp-{out.name}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        self.model.save_pretrained(str(tmp), state_dict=weights, safe_serialization=True)
        if not self.is_lora and self.tokenizer is not None:
            self._tokenizer_files().save_pretrained(str(tmp))
        for path in self._carried_files():
            shutil.copy2(path, tmp / path.name)
        if out.exists():
            old = out.parent / f".old-{out.name}-{os.getpid()}"
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
        if dp is not None:
            dp.barrier()
        return out
