"""The family helper of the Track 2 launch scripts (a bad family or split is a one-line error, exit 2):

* ``python -m openclaw_rl.agentic.families train|eval FAMILY`` prints the path of that split of a
  registered agent family, building it first when needed
  (:meth:`openclaw_rl.agentic.family.AgentFamily.dataset_path`);
* ``python -m openclaw_rl.agentic.families job-env FAMILY`` prints, space-separated, the
  environment variables a submitted job of the family reads: its flags' fallbacks and its
  ``job_env`` (:meth:`~openclaw_rl.agentic.family.AgentFamily.job_env_names`); ``agent_job.sh``
  adds them to ``SLIME_JOB_ENV``.

==============  ============  ====================================================================
family          env_type      data (built once into the model cache)
==============  ============  ====================================================================
``math-tool``   ``math_tool`` GSM-Symbolic training instances of the training templates;
                              held out: the original GSM8K problems of the held-out templates
``terminal``    ``terminal``  AgentBench OS tasks converted to task folders; train: AgentBench's
                              test tasks, held out: its dev tasks
``swe``         ``swe``       the inspect-evals ``ipi_coding_agent`` repositories as SWE-bench
                              instances; train / eval: disjoint repositories
``gui``         ``gui``       MiniWoB++ pages x seeds (``GUI_TRAIN_META_PATH`` /
                              ``GUI_EVAL_META_PATH`` name other pages); pages split by base task
==============  ============  ====================================================================

Each split is a JSONL of ``{"prompt", "label", "metadata"}`` rows with ``metadata.env_type`` and
``metadata.task_key``. Another registered family (an ``openclaw_rl.agent_families`` entry point)
is listed and served the same way.
"""

from __future__ import annotations

import sys
from pathlib import Path

from openclaw_rl.agentic.family import family_class, get_family

__all__ = ["dataset_path", "job_env", "main"]


def dataset_path(name: str, split: str) -> Path:
    """The ``train`` or ``eval`` JSONL of family ``name`` (a name, alias or env type), built on first use.

    Raises:
        ValueError: an unknown family or split; RuntimeError / OSError when the build fails.
    """
    if split not in ("train", "eval"):
        raise ValueError(f"split must be train or eval, got {split!r}")
    return Path(get_family(name).dataset_path(split))


def job_env(name: str) -> list[str]:
    """The environment variables a job of family ``name`` reads (module docstring).

    Raises:
        ValueError: an unknown family.
    """
    return family_class(name).job_env_names()


def main(argv: list[str] | None = None) -> int:
    """``train|eval FAMILY`` -> prints the dataset path; ``job-env FAMILY`` -> the job's
    environment variables (module docstring). Returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2:
        print("usage: python -m openclaw_rl.agentic.families train|eval|job-env FAMILY", file=sys.stderr)
        return 2
    try:
        print(" ".join(job_env(argv[1])) if argv[0] == "job-env" else dataset_path(argv[1], argv[0]))
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
