"""The Track 2 agent families: their data, turn limits and evaluation, in one table.

==============  ============  ====================================================================
family          env_type      data (generated once into ``$OPENCLAW_RL_CACHE/data/<env_type>``)
==============  ============  ====================================================================
``math-tool``   ``math_tool`` GSM-Symbolic training instances of the training templates;
                              held out: the original GSM8K problems of the held-out templates
                              (:mod:`openclaw_rl.envs.math_tool.data`)
``terminal``    ``terminal``  AgentBench OS tasks converted to task folders (its own cache,
                              :mod:`openclaw_rl.envs.terminal.data`); train: AgentBench's test
                              tasks, held out: its dev tasks
``swe``         ``swe``       the inspect-evals ``ipi_coding_agent`` repositories as SWE-bench
                              instances (its own cache, :mod:`openclaw_rl.envs.swe.data`); train /
                              eval: disjoint repositories, every third per injection vector held out
``gui``         ``gui``       MiniWoB++ pages x seeds (its own cache, :mod:`openclaw_rl.envs.gui.data`;
                              ``GUI_TRAIN_META_PATH`` / ``GUI_EVAL_META_PATH`` name other pages);
                              pages split by base task, train and eval disjoint
==============  ============  ====================================================================

A family built here writes ``train.jsonl`` and ``eval.jsonl`` (``{"prompt", "label",
"metadata"}``, with ``metadata.env_type`` and ``metadata.task_key``) and a ``.complete`` marker
into a folder named by its data version; build and lookup are file-locked, so parallel jobs and
tests share one copy. A family with its own cache names its lookup function instead.

CLI (the launch scripts use it): ``python -m openclaw_rl.agentic.families train|eval FAMILY``
prints the path of that split, building it first when needed; a bad name is a one-line error.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FAMILIES", "Family", "dataset_path", "eval_task", "family"]


@dataclass(frozen=True)
class Family:
    """One agent family.

    Attributes:
        name: the family's name (the eval task name).
        env_type: its environment registry name (:mod:`openclaw_rl.agentic.environment`).
        builder: ``module:function`` that writes ``train.jsonl`` and ``eval.jsonl`` into a folder
            (``function(out_dir: pathlib.Path) -> None``).
        version: the data version (bump when the builder's output changes).
        max_turns_env: the environment variable with the episode's turn limit (None: the family
            reads its own config).
        default_max_turns: the turn limit when that variable is unset.
        system_prompt: ``module:NAME`` of the family's system message, or None.
        dataset_fn: ``module:function(split) -> Path`` when the family keeps its own data cache
            (then ``builder`` is unused), with ``eval_split`` the name of its held-out split.
        max_turns_fn: ``module:function() -> int`` when the family's own config holds its turn
            limit (then ``max_turns_env`` is unused).
        episode_fn: ``module:function`` of the family's own episode runner (the ``episode_fn``
            of :func:`openclaw_rl.agentic.generate.generate_agent`), or None for the tool-call loop.
    """

    name: str
    env_type: str
    builder: str
    version: str
    max_turns_env: str | None
    default_max_turns: int
    system_prompt: str | None = None
    dataset_fn: str | None = None
    eval_split: str = "eval"
    max_turns_fn: str | None = None
    episode_fn: str | None = None

    def _attr(self, spec: str):
        module, _, name = spec.partition(":")
        return getattr(importlib.import_module(module), name)

    def max_turns(self) -> int:
        """The turn limit: the family's environment variable, else its config or default.

        Raises:
            ValueError: the variable is set but not a positive integer.
        """
        if self.max_turns_fn:
            return int(self._attr(self.max_turns_fn)())
        raw = os.environ.get(self.max_turns_env or "", "").strip()
        if not raw:
            return self.default_max_turns
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"{self.max_turns_env} must be a positive integer, got {raw!r}")
        return int(raw)

    def system(self) -> str | None:
        """The family's system message, or None."""
        return self._attr(self.system_prompt) if self.system_prompt else None

    def episode_runner(self):
        """The family's episode runner (``episode_fn``), or None."""
        return self._attr(self.episode_fn) if self.episode_fn else None

    def build(self, out_dir: Path) -> None:
        """Write this family's ``train.jsonl`` / ``eval.jsonl`` into ``out_dir``."""
        self._attr(self.builder)(out_dir)


FAMILIES: dict[str, Family] = {
    "math-tool": Family("math-tool", "math_tool", "openclaw_rl.envs.math_tool.data:build_default", "1",
                        None, 16, max_turns_fn="openclaw_rl.envs.math_tool.tools_config:max_turns"),
    "terminal": Family("terminal", "terminal", "", "1", "MAX_STEPS", 20,
                       dataset_fn="openclaw_rl.envs.terminal.data:dataset_path", eval_split="heldout"),
    "swe": Family("swe", "swe", "", "1", None, 250, dataset_fn="openclaw_rl.envs.swe.data:dataset_path",
                  max_turns_fn="openclaw_rl.envs.swe.config:step_limit",
                  episode_fn="openclaw_rl.envs.swe.agent:swe_episode"),
    "gui": Family("gui", "gui", "", "1", "GUI_MAX_STEPS", 15,
                  system_prompt="openclaw_rl.envs.gui.prompts:SYSTEM_PROMPT",
                  dataset_fn="openclaw_rl.envs.gui.data:dataset_path"),
}
_ALIASES = {"math_tool": "math-tool", "toolcall": "math-tool"}


def family(name: str) -> Family:
    """The family called ``name`` (also its env type, or ``toolcall``).

    Raises:
        ValueError: an unknown name.
    """
    key = _ALIASES.get(name, name)
    if key not in FAMILIES:
        raise ValueError(f"unknown agent family {name!r}; choose from {', '.join(FAMILIES)}")
    return FAMILIES[key]


def dataset_path(name: str, split: str) -> Path:
    """The family's ``train`` or ``eval`` JSONL, built on first use (module docstring).

    Raises:
        ValueError: an unknown family or split; RuntimeError when the build fails.
    """
    from openclaw_rl.models import _atomic_build, _file_lock, cache_dir

    if split not in ("train", "eval"):
        raise ValueError(f"split must be train or eval, got {split!r}")
    fam = family(name)
    if fam.dataset_fn:
        return Path(fam._attr(fam.dataset_fn)(split if split == "train" else fam.eval_split))
    root = cache_dir().parent / "data"
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{fam.env_type}-v{fam.version}"
    with _file_lock(root / f".{fam.env_type}.lock"):
        if not (target / ".complete").exists():
            _atomic_build(target, fam.build)
    return target / f"{split}.jsonl"


def eval_task(name: str):
    """The evaluation task of a family (:class:`openclaw_rl.evaluation.tasks.agentic.AgentTask`)."""
    from openclaw_rl.evaluation.tasks.agentic import AgentTask

    fam = family(name)
    return AgentTask(fam.name, fam.env_type, dataset_path(fam.name, "eval"), fam.max_turns(), fam.system(),
                     episode_fn=fam.episode_fn)


def main(argv: list[str] | None = None) -> int:
    """``train|eval FAMILY`` -> prints the dataset path (module docstring). Returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2:
        print("usage: python -m openclaw_rl.agentic.families train|eval FAMILY", file=sys.stderr)
        return 2
    try:
        print(dataset_path(argv[1], argv[0]))
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
