"""The one line for an actor that died mid-step, and where ``--resume-from-checkpoint`` resumes
(fast checks; the real SIGKILL under Ray is tests/test_trainer_death.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from slime.orchestration.actor_death import actor_death_line, resume_hint
from slime.trainer.checkpoint import RUN_CONFIG, TrainerState, resume_point

# Ray 2.x's ActorDiedError text for a worker killed with SIGKILL (as the driver received it)
RAY_TEXT = ("The actor died unexpectedly before finishing this task.\n\tclass_name: TrainActor\n\tactor_id: 3f75\n"
            "\tpid: 20090\n\tnamespace: b79c\n\tip: 127.0.0.1\nThe actor is dead because its worker process has died. "
            "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error "
            "code 2. End of file. Some common causes include: (1) the process was killed by the OOM killer ...")


def _checkpoint(save, step: int) -> None:
    folder = save / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "trainer_state.json").write_text(TrainerState(step=step).to_json())


def test_the_line_names_the_actor_the_step_and_the_checkpoint_to_resume_from(tmp_path):
    save = tmp_path / "ckpt"
    _checkpoint(save, 1)
    line = actor_death_line(RuntimeError(RAY_TEXT), SimpleNamespace(save=str(save)), 2)
    assert "\n" not in line
    assert line == (f"the train actor (TrainActor, pid 20090) died in step 2 (Ray: worker exit type SYSTEM_ERROR: "
                    f"the process was killed, e.g. SIGKILL or the OOM killer, or crashed); resume with "
                    f"--resume-from-checkpoint {save} (checkpoint-1; turns trained after it are trained again, "
                    f"each once)")
    manager = actor_death_line(RuntimeError(RAY_TEXT.replace("TrainActor", "RolloutManager")),
                               SimpleNamespace(save=str(save)), 3)
    assert manager.startswith("the rollout manager (RolloutManager, pid 20090) died in step 3")
    assert "--save not given" in resume_hint(SimpleNamespace(save=None))


def test_a_save_folder_without_a_checkpoint_resumes_at_step_0_only_if_a_run_started_there(tmp_path):
    save = tmp_path / "ckpt"
    save.mkdir()
    with pytest.raises(FileNotFoundError):  # a typo'd or foreign folder is still an error
        resume_point(save)
    (save / RUN_CONFIG).write_text("{}")
    assert resume_point(save) is None
    assert "no checkpoint yet: it starts over from the base model" in resume_hint(SimpleNamespace(save=str(save)))
    _checkpoint(save, 4)
    assert resume_point(save) == (save / "checkpoint-4").resolve()
