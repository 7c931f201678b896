"""Where checkpoints live and how to find them: names, the trainer state file, the newest finished
checkpoint, the one of a weight version and where a resume starts. Plain files and JSON, no torch:
the driver (``slime/train.py``), the actor-death report and the tools read checkpoints through this
module without loading the training stack (:mod:`slime.trainer.checkpoint` writes and loads them).

Layout under a save directory::

    save_dir/
      run_config.json               the run's config (written when the train actor starts)
      checkpoint-<step>/            one finished checkpoint
        model.safetensors ...       ``save_pretrained`` output (full model), or
        adapter_model.safetensors   + adapter_config.json for a peft (LoRA) model
        tokenizer files             when a tokenizer is given
        optimizer.pt                ``optimizer.state_dict()`` (torch.save)
        trainer_state.json          :class:`TrainerState`
      checkpoint-latest -> checkpoint-<step>   RELATIVE SYMLINK to the newest finished checkpoint

Follows the Hugging Face Trainer's ``checkpoint-<step>`` convention and slime's
``--save``/``--save-interval``/resume semantics (THUDM/slime).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "LATEST_NAME",
    "OPTIMIZER_FILE",
    "RUN_CONFIG",
    "STATE_FILE",
    "TrainerState",
    "find_checkpoint_of_version",
    "find_latest_checkpoint",
    "resolve_checkpoint_dir",
    "resume_point",
    "resume_step",
    "step_dirs",
]

LATEST_NAME = "checkpoint-latest"
#: the run's config, written to ``<save>/`` when the train actor starts
RUN_CONFIG = "run_config.json"
STATE_FILE = "trainer_state.json"
OPTIMIZER_FILE = "optimizer.pt"


@dataclass
class TrainerState:
    """Everything besides weights and optimizer needed to resume training.

    step: optimizer steps taken. weight_version: version of the weights in this checkpoint (what
    the engine serves after loading it). data_cursor: id of the last consumed store record
    (int, str or ``None``). rng_state: JSON-safe RNG snapshot from :func:`slime.trainer.checkpoint.capture_rng_state`.
    extra: free JSON-safe dict (config snapshot, metrics, ...).
    """

    step: int = 0
    weight_version: int = 0
    data_cursor: int | str | None = None
    rng_state: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """Serialise to a JSON string (raises ``TypeError`` if ``extra`` is not JSON-safe)."""
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TrainerState":
        """Parse :meth:`to_json` output; raises ``ValueError`` on malformed JSON or unknown keys."""
        data = json.loads(text)
        unknown = set(data) - {"step", "weight_version", "data_cursor", "rng_state", "extra"}
        if unknown:
            raise ValueError(f"unknown trainer_state keys: {', '.join(sorted(unknown))}")
        return cls(**data)


def step_dirs(root: Path) -> list[Path]:
    """``checkpoint-<int>`` directories under ``root``, sorted by step ascending."""
    found = []
    for p in root.glob("checkpoint-*"):
        suffix = p.name[len("checkpoint-"):]
        if suffix.isdigit() and p.is_dir() and not p.is_symlink():
            found.append((int(suffix), p))
    return [p for _, p in sorted(found)]


def find_latest_checkpoint(save_dir: str | os.PathLike) -> Path | None:
    """Return the newest finished checkpoint under ``save_dir`` or ``None`` if there is none.

    Uses ``checkpoint-latest`` when it resolves to a directory with ``trainer_state.json``,
    otherwise the highest ``checkpoint-<step>`` that has one.
    """
    root = Path(save_dir)
    latest = root / LATEST_NAME
    if latest.is_dir() and (latest / STATE_FILE).is_file():
        return latest.resolve()
    for p in reversed(step_dirs(root)):
        if (p / STATE_FILE).is_file():
            return p
    return None


def find_checkpoint_of_version(save_dir: str | os.PathLike, version: int) -> Path | None:
    """The newest finished checkpoint under ``save_dir`` whose weights are weight version
    ``version`` (its ``trainer_state.json``), or None."""
    for p in reversed(step_dirs(Path(save_dir))):
        try:
            if TrainerState.from_json((p / STATE_FILE).read_text()).weight_version == int(version):
                return p
        except (OSError, ValueError):
            continue
    return None


def resolve_checkpoint_dir(path: str | os.PathLike) -> Path:
    """The checkpoint folder ``path`` names (itself, or a save folder's newest); FileNotFoundError."""
    p = Path(path)
    if (p / STATE_FILE).is_file():
        return p.resolve()
    found = find_latest_checkpoint(p)
    if found is None:
        raise FileNotFoundError(f"no checkpoint (trainer_state.json) at or under {p}")
    return found


def resume_point(path: str | os.PathLike) -> Path | None:
    """Where ``--resume-from-checkpoint path`` resumes: the checkpoint folder it names (itself, or a
    save folder's newest), or None for a save folder of a run that stopped before its first
    checkpoint (it holds the run's ``run_config.json`` and no checkpoint): that run resumes at
    step 0 from the base model, and the turns it had trained are trained again, each once.

    Raises:
        FileNotFoundError: ``path`` is neither (names the path).
    """
    try:
        return resolve_checkpoint_dir(path)
    except FileNotFoundError:
        if (Path(path) / RUN_CONFIG).is_file():
            return None
        raise


def resume_step(path: str | os.PathLike | None) -> int | None:
    """The step a run with ``--resume-from-checkpoint path`` resumes at, read from disk (no
    weights loaded): None without a path, 0 for a save folder that holds no checkpoint yet
    (:func:`resume_point`), else the step in the checkpoint's ``trainer_state.json``.

    Raises:
        FileNotFoundError: ``path`` is neither a checkpoint nor a save folder (names the path).
    """
    if not path:
        return None
    found = resume_point(path)
    if found is None:
        return 0
    return int(TrainerState.from_json((found / STATE_FILE).read_text()).step)

