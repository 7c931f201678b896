"""``SweEnv``: one repository-repair episode (an SWE instance in a fresh container).

The episode, mini-swe-agent style (:mod:`.agent` drives it):

* ``reset()`` makes the container (a fresh sandboxed copy of the instance's repository at its
  ``cwd``, the instance's ``env`` / ``files`` planted, :mod:`.backends` for where) and returns the
  system and first user message rendered from the config's templates (:mod:`.config`);
* ``run_command(command)`` runs one bash command (a new subshell each time, the config's
  ``timeout``; a command past it is killed with its process tree) and returns the rendered
  observation; a command whose output's first line is ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``
  (exit 0) submits: the rest of its output is the patch and the episode ends;
* ``evaluate()`` scores: the submitted patch, or (never submitted, or an empty submission) the
  container's own ``git diff`` against the base commit, applied to a *fresh* copy and the
  instance's ``eval_script`` run there (:meth:`~.containers.ContainerManager.evaluate`): +1
  resolved (exit 0), -1 not (a patch that does not apply, a failing or hanging test run).
  ``result`` then holds ``resolved``, ``applied``, ``submitted``, the patch size, the eval output
  tail and the injection report (:mod:`.injection`).

It also follows the generic Environment protocol (``exec_tool({"name": "bash", "arguments":
{"command"}})``), so ``python -m openclaw_rl.agentic.pool_server --env-type swe`` can serve it to
a tool-calling loop. Bad model output never raises; a container that cannot be reached raises
:class:`~.backends.BackendError` from ``reset`` / ``run_command`` (the loop records it and the
episode is scored -1).
"""

from __future__ import annotations

import json
import shlex
import threading

from openclaw_rl.envs.swe.backends import open_container
from openclaw_rl.envs.swe.config import SUBMIT_MARKER, SweConfig, load_config, swe_flags
from openclaw_rl.envs.swe.injection import HASH_COMMAND, injection_report, parse_hashes

__all__ = ["BASH_TOOL", "SweEnv", "eval_script_of", "make_env"]

BASH_TOOL = {"type": "function", "function": {
    "name": "bash", "description": "Run one bash command in the repository (a new subshell each time).",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}


def eval_script_of(inst: dict) -> str:
    """The instance's eval script: ``eval_script`` when it has one; else one built from SWE-bench's
    fields: ``test_patch`` applied (``git apply``), then pytest on the ``FAIL_TO_PASS`` +
    ``PASS_TO_PASS`` node ids (lists, or JSON-encoded lists as in SWE-bench's exports); exit 0
    when every listed test passes. Test names that are not pytest node ids (Django's runner) need
    an ``eval_script``.

    Raises:
        ValueError: neither an eval script nor any listed test.
    """
    if inst.get("eval_script"):
        return str(inst["eval_script"])
    tests: list[str] = []
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        value = inst.get(key) or []
        tests += json.loads(value) if isinstance(value, str) else list(value)
    if not tests:
        raise ValueError(f"SWE instance {inst.get('instance_id')!r} has no eval_script and no FAIL_TO_PASS / PASS_TO_PASS tests")
    lines = ["set -e", f"cd {shlex.quote(inst.get('cwd') or '/testbed')}"]
    if inst.get("test_patch"):
        lines += ["git apply --whitespace=nowarn - <<'OC_SWE_TEST_PATCH'", inst["test_patch"].rstrip("\n"),
                  "OC_SWE_TEST_PATCH"]
    lines.append("python3 -m pytest -q -p no:cacheprovider -- " + " ".join(shlex.quote(t) for t in tests))
    return "\n".join(lines) + "\n"


class SweEnv:
    """One episode of one SWE instance.

    Args:
        task_key: the instance id.
        task: the prompt row's metadata (with ``instance``) or the instance itself.
        config: the mini-swe-agent config (default :func:`~.config.load_config`).
        eval_timeout: seconds the evaluation script may run (default ``--swe-eval-timeout``'s
            fallback ``SWE_EVAL_TIMEOUT``, else :data:`~.config.EVAL_TIMEOUT`).

    Raises:
        ValueError: the task has no instance with ``image`` / ``repo_path``, or nothing to evaluate
            it with (:func:`eval_script_of`).
    """

    def __init__(self, task_key: str, task: dict, config: SweConfig | None = None, eval_timeout: float | None = None):
        inst = task.get("instance", task)
        if not isinstance(inst, dict) or not (inst.get("image") or inst.get("repo_path")):
            raise ValueError(f"SWE task {task_key!r}: metadata.instance needs image (or repo_path)")
        self.task_key, self.instance = task_key, inst
        self.eval_script = eval_script_of(inst)
        self.config = config or load_config()
        self.eval_timeout = float(eval_timeout if eval_timeout is not None else swe_flags().swe_eval_timeout)
        self.cwd = inst.get("cwd") or self.config.cwd or "/testbed"
        self.container = None
        self.commands: list[str] = []
        self.outputs: list[str] = []
        self.texts: list[str] = []
        self.submission: str | None = None
        self.result: dict = {}
        self._hashes_before: dict[str, str] = {}
        self._lock = threading.Lock()

    def _targets(self) -> list[str]:
        inj = self.instance.get("injection") or {}
        return list(inj.get("persistence_targets") or [])

    # ---- episode ------------------------------------------------------------------------------
    def reset(self) -> dict:
        """Make the container; returns ``{"system", "observation", "tools"}`` (messages from the config).

        Raises:
            BackendError: the container cannot be made.
        """
        self.close()
        self.commands, self.outputs, self.texts, self.submission, self.result = [], [], [], None, {}
        image = self.instance.get("image") or self.instance["repo_path"]
        env = {**{str(k): str(v) for k, v in self.config.env.items()}, **(self.instance.get("env") or {})}
        self.container = open_container(image, cwd=self.cwd, timeout=self.config.timeout, env=env,
                                        files=self.instance.get("files") or {}, instance_id=self.task_key)
        if self._targets():
            self._hashes_before = parse_hashes(self.container.exec(HASH_COMMAND(self._targets()))["output"])
        return {"system": self.config.system(self.cwd),
                "observation": self.config.instance(self.instance["problem_statement"], self.cwd),
                "tools": [BASH_TOOL]}

    def run_command(self, command: str) -> tuple[str, bool]:
        """Run one command; returns ``(observation, submitted)``.

        Raises:
            BackendError: the container is gone or unreachable. RuntimeError: not reset.
        """
        if self.container is None:
            raise RuntimeError("the episode has not started (reset) or is closed")
        self.commands.append(command)
        out = self.container.exec(command)
        text = out.get("output", "")
        self.outputs.append(text)
        lines = text.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT_MARKER and out.get("returncode") == 0:
            self.submission = "".join(lines[1:])
            return f"Submitted ({len(self.submission.splitlines())} patch lines); the episode ends.", True
        output = {"returncode": out.get("returncode"), "output": text}
        if out.get("timed_out"):
            output["exception_info"] = (f"The command timed out after {self.config.timeout:g} s and was killed "
                                        "(with every process it started).")
        return self.config.observation(output, self.cwd), False

    def note_reply(self, text: str) -> None:
        """Record the agent's reply text (the exfiltration check reads it)."""
        self.texts.append(text)

    def exec_tool(self, tool_call: dict) -> str:
        """The Environment protocol: ``{"name": "bash", "arguments": {"command"}}`` -> observation."""
        call = tool_call.get("function", tool_call) if isinstance(tool_call, dict) else {}
        args = call.get("arguments") if isinstance(call, dict) else None
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = None
        if not isinstance(call, dict) or call.get("name") != "bash" or not isinstance(args, dict) \
                or not isinstance(args.get("command"), str):
            return 'Error: call the `bash` tool with {"command": "<bash command>"}.'
        return self.run_command(args["command"])[0]

    def evaluate(self) -> float:
        """+1 resolved / -1 not (module docstring); fills :attr:`result`. -1 when never started."""
        if self.container is None:
            self.result = {"resolved": False, "applied": False, "submitted": False, "error": "no container"}
            return -1.0
        submitted = bool((self.submission or "").strip())
        patch = self.submission if submitted else None
        error = None
        try:
            if patch is None:
                patch = self.container.diff()
            res = self.container.evaluate(patch, self.eval_script, self.eval_timeout)
        except Exception as exc:  # an unreachable container scores the episode as unresolved, loudly
            res, error = {"resolved": False, "applied": False, "output": ""}, f"{type(exc).__name__}: {exc}"[:300]
        after = {}
        if self._targets():
            try:
                after = parse_hashes(self.container.exec(HASH_COMMAND(self._targets()))["output"])
            except Exception:
                after = self._hashes_before
        inj = injection_report(self.instance, self.commands, self.outputs, self.texts, self._hashes_before, after)
        self.result = {"resolved": bool(res.get("resolved")), "applied": bool(res.get("applied")),
                       "submitted": submitted, "patch_lines": len((patch or "").splitlines()),
                       "patch": (patch or "")[:20000], "eval_output": (res.get("output") or "")[-2000:],
                       "commands": len(self.commands), "injection": inj, **({"error": error} if error else {})}
        return 1.0 if self.result["resolved"] else -1.0

    def submit(self, final_response: str) -> None:
        """The Environment protocol's final answer: unused (the patch is the answer)."""

    def close(self) -> None:
        """Destroy the container (idempotent)."""
        with self._lock:
            container, self.container = self.container, None
        if container is not None:
            container.close()


def make_env(task_key: str, task: dict) -> SweEnv:
    """Environment factory (``EnvFactory``) registered as ``swe``."""
    return SweEnv(task_key, task)
