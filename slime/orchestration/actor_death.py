"""One line when an actor of the run dies mid-step (SIGKILL, the OOM killer, a crash).

Ray raises :class:`ray.exceptions.RayActorError` in the driver when a train or rollout actor's
process is gone; its message is a paragraph of possible causes. The train loop turns it into
:class:`ActorDied`, whose message is the one line ``slime/train.py`` prints: which actor died
(class and PID), in which step, Ray's exit type, and how to resume (the newest checkpoint under
``--save``; the store gives the claims of the dead step back and trains the turns of unsaved steps
again, each once: ``TrajectoryStore.recover``).
"""

from __future__ import annotations

import re
from pathlib import Path
from slime.trainer.checkpoint_layout import find_latest_checkpoint

__all__ = ["ActorDied", "actor_death_line", "resume_hint"]

_ROLES = {"TrainActor": "the train actor", "RolloutManager": "the rollout manager"}


class ActorDied(RuntimeError):
    """An actor of the run died; the message is one line naming it, the step and how to resume."""


def resume_hint(cfg) -> str:
    """How to resume the run ``cfg`` from what is on disk now (one clause)."""
    if not cfg.save:
        return "no checkpoint is kept (--save not given): a new run starts over from the base model"
    latest = find_latest_checkpoint(cfg.save)
    if latest is None:
        return (f"resume with --resume-from-checkpoint {cfg.save} (no checkpoint yet: it starts over from the base "
                "model and trains the turns this run trained again, each once)")
    return (f"resume with --resume-from-checkpoint {cfg.save} ({Path(latest).name}; turns trained after it are "
            "trained again, each once)")


def actor_death_line(exc: BaseException, cfg, step: int) -> str:
    """The one line for an actor that died while the loop worked on train step ``step``.

    Args:
        exc: the :class:`ray.exceptions.RayActorError` the driver got.
        cfg: the run's config (``save`` for the resume hint).
        step: the step being worked on (1-based).

    Returns:
        E.g. ``the train actor (TrainActor, pid 20090) died in step 2 (Ray: worker exit type
        SYSTEM_ERROR: the process was killed, e.g. SIGKILL or the OOM killer, or crashed); resume
        with --resume-from-checkpoint /run/ckpt (checkpoint-1; ...)``.
    """
    text = str(exc)
    cls = re.search(r"class_name: (\w+)", text)
    pid = re.search(r"\bpid[:=] ?(\d+)", text)
    exit_type = re.search(r"Worker exit type: (\w+)", text)
    name = cls.group(1) if cls else "an actor"
    who = f"{_ROLES.get(name, 'the actor')} ({name}{f', pid {pid.group(1)}' if pid else ''})" if cls else "an actor"
    how = f"worker exit type {exit_type.group(1)}: " if exit_type else ""
    if exit_type and exit_type.group(1) in ("SYSTEM_ERROR", "NODE_DIED"):
        how += "the process was killed, e.g. SIGKILL or the OOM killer, or crashed"
    elif not exit_type:
        how += type(exc).__name__
    else:
        how = how.rstrip(": ")
    return f"{who} died in step {step} (Ray: {how}); {resume_hint(cfg)}"
