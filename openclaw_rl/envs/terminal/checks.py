"""Setting up and scoring one AgentBench OS task in the sandbox (inspect-evals' scorer, ported).

Evaluation kinds (``task["evaluation"]["kind"]``, from :mod:`.convert`):

* ``match``: the submitted answer (whitespace-stripped) equals the recorded answer.
* ``compare``: the task's comparison script (``check/integer-match.py``, ``size-match.py``,
  ``string-match.py``) gets ``answer expected`` and must exit 0.
* ``check_script``: ``bash <script>`` (``checking/N.sh``) exits 0 in the agent's sandbox.
* ``check_command``: the task's check command exits 0 in the agent's sandbox.

Where this differs from inspect-evals 0.28.0, and why:

* The expected answer of a ``compare`` task is the output of the task's own example command,
  run in the agent's sandbox right after setup, before the agent acts (:func:`expected_answer`,
  called by ``reset``), and kept out of the agent's sight. inspect uses the recorded ``match``
  when there is one (values of its Docker image, e.g. 43 groups or ``35M``, that no other root
  reproduces) and otherwise runs the example after the agent acted, where the agent can change
  what the example prints (delete the files it counts) and pass with a wrong answer. Setups
  that use ``$RANDOM``, ``/dev/urandom`` or pids make a second "reference" sandbox disagree, so
  the agent's own sandbox, untouched yet, is the only faithful place. Two examples also create
  what they count (``mkdir -p``: test 89 and 92), so in those episodes the dirs exist already.
* The comparison script runs in a fresh, empty sandbox, not in the agent's: an agent that
  replaces ``python3`` in its own sandbox cannot fool it. Check scripts and commands (which
  inspect the state the agent left) must run in the agent's sandbox, as in inspect; an agent
  that rewrites the tools they call (``bash``, ``python3``) could fool those, as in inspect.
* Scripts are staged into the sandbox at scoring time (as inspect does), so the agent cannot
  read or replace them beforehand.
"""

from __future__ import annotations

import shlex

from openclaw_rl.agentic.sandbox import ExecResult, Sandbox, SandboxLimits

AGENT_HOME = "/home/agent"
STAGE_DIR = "/tmp/agent_bench_scripts"
SETUP_TIMEOUT = 120.0
CHECK_TIMEOUT = 120.0
TERMINAL_LIMITS = SandboxLimits(cpu_seconds=60, memory_mb=1024, max_processes=256,
                                wall_seconds=30.0, output_bytes=8192, file_size_mb=256)


class TaskSetupError(RuntimeError):
    """A task's setup script failed in the sandbox (one line: task key, exit code, output tail)."""


def agent_user(task: dict) -> str:
    """The user the agent's commands run as (``root`` unless the task's init names one)."""
    return task.get("user") or "root"


def agent_env(task: dict, user: str) -> dict[str, str]:
    """Environment of commands: inspect's image sets ``HOME=/home/agent`` unless a user is named."""
    if task.get("user"):
        return {} if user != "root" else {"HOME": "/root"}
    return {"HOME": AGENT_HOME}


def run_as(box: Sandbox, task: dict, command: str, *, user: str | None = None,
           timeout: float = CHECK_TIMEOUT) -> ExecResult:
    """Run ``command`` in ``/home/agent`` as ``user`` (default: the agent's user)."""
    user = user or agent_user(task)
    return box.run(command, cwd=AGENT_HOME, user=user, env=agent_env(task, user), timeout=timeout)


def start_task(task: dict, limits: SandboxLimits = TERMINAL_LIMITS) -> Sandbox:
    """A fresh sandbox with the task's setup done.

    Raises:
        TaskSetupError: the setup script failed (the sandbox is closed).
        SandboxError: no sandbox here.
    """
    box = Sandbox(workdir=AGENT_HOME, limits=limits, files={"/tmp/oc_setup.sh": task["setup"]})
    try:
        r = run_as(box, task, "bash /tmp/oc_setup.sh; rc=$?; rm -f /tmp/oc_setup.sh; exit $rc",
                   user="root", timeout=SETUP_TIMEOUT)
        if r.returncode != 0:
            raise TaskSetupError(f"{task['task_key']}: setup exited {r.returncode}: "
                                 f"{r.output.strip()[-300:]}")
    except BaseException:
        box.close()
        raise
    return box


def stage(box: Sandbox, task: dict, name: str) -> str:
    """Write the task's script ``name`` into the sandbox's staging dir; returns its path."""
    path = f"{STAGE_DIR}/{name}"
    box.write_file(path, task["scripts"][name], mode=0o755)
    return path


def example_command(box: Sandbox, task: dict) -> str | None:
    """The task's example as a command line (a staged script for file examples), or ``None``."""
    example = task["evaluation"].get("example") or {}
    if example.get("code"):
        return example["code"]
    if example.get("script"):
        return f"bash {stage(box, task, example['script'])}"
    return None


def expected_answer(task: dict, box: Sandbox) -> str | None:
    """The expected answer of a ``compare`` task: the example's stdout in ``box``, else the match.

    Call it right after :func:`start_task`, before the agent acts. ``None`` when the example fails.
    """
    ev = task["evaluation"]
    if ev["kind"] != "compare":
        return ev.get("match")
    command = example_command(box, task)
    if command is None:
        return ev.get("match")
    r = run_as(box, task, f"{{ {command}\n}} 2>/dev/null")
    box.run(f"rm -rf {STAGE_DIR}")
    if r.returncode != 0 or r.truncated:
        return None
    return r.output.strip()


def passes(task: dict, box: Sandbox, answer: str | None, expected: str | None) -> bool:
    """Whether the episode in ``box`` solves ``task``.

    Args:
        task: the task spec. box: the agent's sandbox. answer: the submitted answer (or ``None``).
        expected: what :func:`expected_answer` returned at reset.

    Errors of the checks themselves (a script that cannot run) count as failed.
    """
    ev = task["evaluation"]
    kind = ev["kind"]
    if kind == "match":
        return answer is not None and answer.strip() == ev["match"].strip()
    if kind == "check_script":
        return run_as(box, task, f"bash {stage(box, task, ev['script'])}", user="root").returncode == 0
    if kind == "check_command":
        return run_as(box, task, ev["command"], user="root").returncode == 0
    if kind == "compare":
        if answer is None or expected is None:
            return False
        with Sandbox(limits=box.limits) as clean:
            script = stage(clean, task, ev["compare_script"])
            r = clean.run(f"python3 {script} {shlex.quote(answer.strip())} {shlex.quote(expected)}")
            return r.returncode == 0
    raise ValueError(f"unknown evaluation kind {kind!r}")
