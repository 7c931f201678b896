"""Agent family contract (:class:`openclaw_rl.agentic.family.AgentFamily`): every registered family
is a registered, picklable, cheap object whose flags join the trainer's command line without a
clash, whose datasets carry its ``env_type`` and a ``task_key``, and whose environments the
environment registry (pool servers) builds by that ``env_type``; a scratch fifth family added as its
own installed package (a copy of ``terminal`` under another name: its package and one entry-point
line, no core file) is found by the dataset helper, the environment registry, the trainer's flags
and ``openclaw-rl eval``."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openclaw_rl.agentic.environment import get_factory, registered_envs
from openclaw_rl.agentic.family import AgentFamily, family_class, family_names, get_family
from openclaw_rl.rollout.service import OpenClawRolloutService
from slime.config.arguments import core_flag_specs
from slime.config.flags import flag_specs
from slime.methods.registry import registered_method_classes

REPO = Path(__file__).resolve().parents[2]
BUILTIN = ("math-tool", "terminal", "swe", "gui")


def test_the_four_families_are_registered_under_their_names_and_aliases():
    assert family_names()[:4] == list(BUILTIN)
    env_types, names = set(), set()
    for name in family_names():
        cls = family_class(name)
        assert issubclass(cls, AgentFamily) and cls.name == name and cls.env_type
        assert family_class(cls.env_type) is cls and all(family_class(a) is cls for a in cls.aliases)
        assert cls.env_type not in env_types and not names & {name, *cls.aliases}
        env_types.add(cls.env_type)
        names |= {name, *cls.aliases}
    assert family_class("toolcall").name == "math-tool" and family_class("retool").name == "math-tool"
    with pytest.raises(ValueError, match="unknown agent family 'nope'; choose from math-tool, terminal"):
        family_class("nope")


@pytest.mark.parametrize("name", BUILTIN)
def test_a_family_is_cheap_picklable_and_its_flags_are_frozen(name):
    t0 = time.monotonic()
    fam = get_family(name)
    assert time.monotonic() - t0 < 1.0  # nothing heavy at construction (it is built in every worker)
    again = pickle.loads(pickle.dumps(fam))
    assert type(again) is type(fam) and again.flags == fam.flags
    assert isinstance(fam.max_turns(), int) and fam.max_turns() >= 1
    if fam.Flags is not None:
        assert dataclasses.is_dataclass(fam.Flags) and fam.Flags.__dataclass_params__.frozen
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(fam.flags, dataclasses.fields(fam.Flags)[0].name, None)


def test_family_flags_join_the_trainer_without_a_clash():
    """One ``flag()`` declaration per setting: no family flag shares a name with the core's, the
    service's, a method's or another family's."""
    taken = {s.name for s in core_flag_specs()} | {s.name for s in flag_specs(OpenClawRolloutService.Flags)}
    for cls in registered_method_classes().values():
        taken |= {s.name for s in flag_specs(cls.Flags)} if cls.Flags is not None else set()
    sections = OpenClawRolloutService.flag_sections()
    assert {sec.key for sec in sections} == {"family"} and sections
    for sec in sections:
        names = {s.name for s in flag_specs(sec.cls)}
        assert not names & taken, names & taken
        taken |= names


@pytest.mark.parametrize("name", ["math-tool", "gui"])  # terminal and swe build theirs in the eval tests
def test_datasets_carry_the_env_type_and_a_task_key(name):
    fam = get_family(name)
    for split in ("train", "eval"):
        path = fam.dataset_path(split)
        row = json.loads(Path(path).read_text(encoding="utf-8").splitlines()[0])
        assert set(row) >= {"prompt", "label", "metadata"} and row["metadata"]["env_type"] == fam.env_type
        assert row["metadata"]["task_key"]
    with pytest.raises(ValueError, match="split must be train or eval"):
        fam.dataset_path("test")


@pytest.mark.parametrize("name", ["math-tool", "terminal", "swe", "gui"])
def test_the_launch_helper_carries_what_a_familys_job_reads(name):
    """``agent_job.sh``'s ``require_env_type`` asks the family (``job-env``) which variables a
    submitted job reads: its flags' environment fallbacks first, then its ``job_env``."""
    cls = family_class(name)
    flag_env = [s.env for s in flag_specs(cls.Flags) if s.env] if cls.Flags else []
    r = subprocess.run([sys.executable, "-m", "openclaw_rl.agentic.families", "job-env", name], capture_output=True,
                       text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0 and r.stdout.split() == cls.job_env_names() == list(dict.fromkeys(flag_env + list(cls.job_env)))
    assert {"gui": "GUI_MAX_IMAGE_HISTORY_LENGTH", "terminal": "MAX_STEPS", "swe": "SWE_STEP_LIMIT",
            "math-tool": "TOOLS_CONFIG"}[name] in r.stdout.split()
    bad = subprocess.run([sys.executable, "-m", "openclaw_rl.agentic.families", "job-env", "nope"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "unknown agent family" in bad.stderr


def test_the_environment_registry_builds_every_family_by_its_env_type():
    envs = registered_envs()
    for name in BUILTIN:
        cls = family_class(name)
        assert envs[cls.env_type].endswith(f"{cls.__qualname__}.make_env")
        assert callable(get_factory(cls.env_type))
    env = get_factory("math_tool")("gsm8k/1", {"env_type": "math_tool", "task_key": "gsm8k/1", "label": "3",
                                                "question": "What is 1 + 2?"})
    try:
        assert env.reset()["tools"][0]["function"]["name"] == "code_interpreter"
    finally:
        env.close()


SCRATCH = '''
from openclaw_rl.envs.terminal.family import TerminalFamily
from dataclasses import dataclass
from slime.config.flags import flag


@dataclass(frozen=True)
class ScratchFlags:
    scratch_max_steps: int = flag(2, "scratch: replies per episode", env="SCRATCH_MAX_STEPS", ge=1)


class ScratchFamily(TerminalFamily):
    """terminal under another name, from its own package."""

    name = "scratch"
    env_type = "scratch"
    Flags = ScratchFlags

    def max_turns(self):
        return self.flags.scratch_max_steps
'''


def scratch_package(root: Path) -> dict:
    """An installed package with one family (a dist-info with its entry point); returns the environment
    that puts it on the path."""
    (root / "scratchfam").mkdir(parents=True)
    (root / "scratchfam" / "__init__.py").write_text("")
    (root / "scratchfam" / "family.py").write_text(SCRATCH)
    info = root / "scratchfam-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: scratchfam\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[openclaw_rl.agent_families]\nscratch = scratchfam.family:ScratchFamily\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}


def test_a_fifth_family_from_its_own_package_needs_no_core_change(tmp_path):
    env = scratch_package(tmp_path / "pkg")
    probe = r'''
import json
from openclaw_rl.agentic.environment import get_factory
from openclaw_rl.agentic.families import dataset_path
from openclaw_rl.agentic.family import get_family
from openclaw_rl.evaluation.tasks import make_task, task_names
from slime.config.run_args import parse_run_args
cfg = parse_run_args(["--model-path", "builtin:tiny-qwen3", "--scratch-max-steps", "3"])
task = make_task("scratch")
print(json.dumps({"names": list(task_names()), "train": str(dataset_path("scratch", "train")),
                  "factory": get_factory("scratch").__qualname__, "turns": get_family("scratch", cfg).max_turns(),
                  "eval_turns": task.family.max_turns(), "items": len(task.items())}))
'''
    r = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["names"][-1] == "scratch" and out["train"].endswith("train.jsonl")
    assert out["factory"] == "ScratchFamily.make_env" and out["turns"] == 3 and out["eval_turns"] == 2
    assert out["items"] > 0
    r = subprocess.run([sys.executable, "-m", "openclaw_rl.agentic.families", "eval", "scratch"], cwd=REPO,
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and r.stdout.strip().endswith(".jsonl"), r.stderr
    r = subprocess.run([sys.executable, "-m", "openclaw_rl.agentic.families", "eval", "scratch"], cwd=REPO,
                       capture_output=True, text=True, timeout=300)  # not installed: one line
    assert r.returncode == 2 and r.stderr.strip().startswith("error: unknown agent family 'scratch'")
