"""MathToolEnv: one toolcall-rl episode (a math problem, a sandboxed Python interpreter, a score).

Implements the Environment protocol (:mod:`openclaw_rl.agentic.environment`): ``reset`` ->
``{"observation": task text, "tools": [code_interpreter schema]}``; ``exec_tool`` runs the code
of a ``code_interpreter`` call as ``python3 /workspace/main.py`` in a fresh
:class:`openclaw_rl.agentic.sandbox.Sandbox` (no network, the host system read-only, standard
library only) under the tools config's limits (``python_timeout`` wall-clock and CPU seconds,
``python_memory_limit`` address space; at most ``tool_concurrency`` programs at once per
process), and closes that sandbox when the program returns, so
whatever it left behind (background processes, a fork bomb's children, files) is gone: every
call starts clean, as upstream's interpreter (a fresh subprocess in a fresh temp dir per call);
``evaluate`` -> the reward of the final answer
(:func:`openclaw_rl.envs.math_tool.reward.score_answer`); ``close``.

Beyond the protocol, :meth:`MathToolEnv.submit` records the agent's final text (the agent loop
calls it with the last assistant message before ``evaluate``; until then the episode has no answer
and scores as wrong).

Observations:

* a call that ran: ``<interpreter>\\n{output}\\n</interpreter>`` where output is stdout and
  stderr interleaved, cut to ``max_obs_chars`` characters keeping the first and the last half
  with ``... [N characters truncated] ...`` between; ``(no output; print() the values you
  need)`` when empty; a timeout, a kill by a signal (e.g. the memory limit) or a non-zero exit
  adds a line saying so. The episode's :attr:`MathToolEnv.tool_calls` counts these, and these
  only begin with ``<interpreter>`` (the agent loop's ``metadata["tool_calls"]`` counts them the
  same way).
* a program still running when the episode is closed (e.g. the pool server closing an expired
  lease) is killed, and its call returns ``Error: the episode was closed while the program ran.``
* anything else (not a dict, unknown tool, arguments that are not a JSON object, no ``code``
  string, the ``max_tool_calls`` limit reached): one ``Error: ...`` line saying what is wrong.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

from openclaw_rl.envs.math_tool.prompt import TOOL_NAME, task_prompt
from openclaw_rl.envs.math_tool.reward import score_answer
from openclaw_rl.envs.math_tool.tools_config import ToolsConfig, load_tools_config

__all__ = ["MathToolEnv", "format_output", "make_env", "truncate_middle"]

PROGRAM_PATH = "/workspace/main.py"
NO_OUTPUT = "(no output; print() the values you need)"
_SLOTS: dict[int, threading.BoundedSemaphore] = {}
_SLOTS_LOCK = threading.Lock()


def _slots(n: int) -> threading.BoundedSemaphore:
    """The process-wide semaphore that caps programs running at once (``tool_concurrency``)."""
    with _SLOTS_LOCK:
        return _SLOTS.setdefault(n, threading.BoundedSemaphore(n))


def truncate_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: the first and the last ``limit // 2`` with
    ``\\n... [N characters truncated] ...\\n`` between (unchanged when short enough)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n... [{cut} characters truncated] ...\n{text[len(text) - half:]}"


def format_output(output: str, *, returncode: int, timed_out: bool, timeout: float, memory_mb: int,
                  limit: int) -> str:
    """The ``<interpreter>`` observation of one program run (see the module doc).

    Args:
        output: the program's stdout+stderr.
        returncode: its exit status (124 on a wall-clock timeout, 128+signal when killed).
        timed_out: whether the wall-clock limit stopped it.
        timeout: that limit in seconds; memory_mb: the memory limit (for the message).
        limit: ``max_obs_chars``.
    """
    body = truncate_middle(output.rstrip("\n"), limit) if output.strip() else ""
    notes = []
    if timed_out:
        notes.append(f"Error: the program was stopped after the time limit of {timeout:g} seconds "
                     f"(python_timeout).")
    elif returncode > 128:
        sig = returncode - 128
        why = {24: " (CPU time limit)", 9: " (SIGKILL: a resource limit or the episode stopping)"}.get(sig, "")
        notes.append(f"Error: the program was killed by signal {sig}{why}; limits: {timeout:g} s, "
                     f"{memory_mb} MB.")
    elif returncode != 0:
        if "MemoryError" in output:
            notes.append(f"Error: the program ran out of memory (python_memory_limit = {memory_mb} MB).")
        notes.append(f"[exit code {returncode}]")
    if not body and not notes:
        body = NO_OUTPUT
    text = "\n".join(x for x in [body, *notes] if x)
    return f"<interpreter>\n{text}\n</interpreter>"


class MathToolEnv:
    """One episode of a math_tool task (see the module doc).

    Args:
        task_key: the task's key (for messages).
        task: the dataset row's metadata; reads ``question`` and ``label``.
        config: the tools config (default: :func:`load_tools_config`).

    Raises:
        ValueError: ``task`` lacks ``question`` or ``label``.
    """

    def __init__(self, task_key: str, task: dict, config: ToolsConfig | None = None) -> None:
        question, label = task.get("question"), task.get("label")
        if not isinstance(question, str) or not question.strip() or label is None or str(label).strip() == "":
            raise ValueError(f"math_tool task {task_key!r} needs 'question' and 'label' in its metadata")
        self.task_key, self.question, self.label = task_key, question, str(label)
        self.config = config or load_tools_config()
        self.tool_calls = 0
        self.final_text: str | None = None
        self._sandbox = None
        self._lock = threading.Lock()
        self._closed = False

    def reset(self) -> dict:
        """Start (or restart) the episode: ``{"observation": task text, "tools": [schemas]}``."""
        with self._lock:
            self._close_sandbox()
            self.tool_calls, self.final_text, self._closed = 0, None, False
        return {"observation": task_prompt(self.question), "tools": list(self.config.tools)}

    def _parse(self, tool_call: Any) -> tuple[str | None, str]:
        """``(code, "")`` for a well-formed interpreter call, else ``(None, error observation)``."""
        if not isinstance(tool_call, dict):
            kind = type(tool_call).__name__
            return None, f"Error: a tool call must be an object with 'name' and 'arguments', got {kind}."
        name = tool_call.get("name")
        if name not in self.config.tool_names or name != TOOL_NAME:
            offered = ", ".join(self.config.tool_names)
            return None, f"Error: unknown tool {name!r}; available tools: {offered}."
        args = tool_call.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as e:
                return None, (f"Error: the arguments of {TOOL_NAME} are not valid JSON ({e.msg}); "
                              'send {"code": "..."}.')
        if not isinstance(args, dict):
            return None, f"Error: the arguments of {TOOL_NAME} must be a JSON object like {{\"code\": \"...\"}}."
        code = args.get("code")
        if not isinstance(code, str) or not code.strip():
            return None, f"Error: {TOOL_NAME} needs a 'code' argument: a non-empty string of Python."
        return code, ""

    def exec_tool(self, tool_call: dict) -> str:
        """Run one tool call and return its observation (never raises for bad model output).

        Raises:
            openclaw_rl.agentic.sandbox.SandboxError: the sandbox cannot start (an infrastructure
                failure, not the model's).
            RuntimeError: the episode is closed.
        """
        code, error = self._parse(tool_call)
        if code is None:
            return error
        with self._lock:
            if self._closed:
                raise RuntimeError(f"math_tool episode {self.task_key!r} is closed")
            if self.tool_calls >= self.config.max_tool_calls:
                return (f"Error: the limit of {self.config.max_tool_calls} code_interpreter calls is reached; "
                        "give your final answer in \\boxed{}.")
            self.tool_calls += 1
        cfg = self.config
        with _slots(cfg.tool_concurrency):
            with self._lock:
                if self._closed:
                    raise RuntimeError(f"math_tool episode {self.task_key!r} is closed")
                sandbox = self._sandbox = self._new_sandbox(code)
            try:
                result = sandbox.run(f"exec python3 -u {PROGRAM_PATH}", timeout=cfg.python_timeout, cwd="/workspace",
                                     env={"PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"})
            finally:
                with self._lock:
                    if self._sandbox is sandbox:
                        self._sandbox = None
                sandbox.close()  # kills anything the program left running
        if self._closed:
            return "Error: the episode was closed while the program ran."
        return format_output(result.output, returncode=result.returncode, timed_out=result.timed_out,
                             timeout=cfg.python_timeout, memory_mb=cfg.memory_mb, limit=cfg.max_obs_chars)

    def _new_sandbox(self, code: str):
        from openclaw_rl.agentic.sandbox import Sandbox, SandboxLimits
        cfg = self.config
        limits = SandboxLimits(cpu_seconds=max(1, math.ceil(cfg.python_timeout)), memory_mb=cfg.memory_mb,
                               wall_seconds=cfg.python_timeout, output_bytes=max(16384, 4 * cfg.max_obs_chars))
        return Sandbox(files={PROGRAM_PATH: code}, limits=limits)

    def submit(self, final_text: str) -> None:
        """Record the agent's final text (its last assistant message); :meth:`evaluate` scores it.
        Calling it again replaces the answer."""
        self.final_text = final_text if isinstance(final_text, str) else str(final_text)

    def score(self) -> dict[str, Any]:
        """:func:`score_answer` of the submitted text (``""`` when none) with this episode's tool calls."""
        return score_answer(self.final_text or "", self.label, self.tool_calls)

    def evaluate(self) -> float:
        """The episode's outcome reward: 1.0 for a correct ``\\boxed{}`` answer, else upstream's
        tool-use shaped value ``min(-0.6, -1.1 + 0.05 * tool_calls)`` (:mod:`.reward`)."""
        return float(self.score()["reward"])

    def _close_sandbox(self) -> None:
        """Kill a program still running (a concurrent :meth:`close`)."""
        if self._sandbox is not None:
            sandbox, self._sandbox = self._sandbox, None
            sandbox.close()

    def close(self) -> None:
        """End the episode (kills a program still running); idempotent. A later :meth:`exec_tool`
        raises RuntimeError until :meth:`reset`."""
        with self._lock:
            self._closed = True
            self._close_sandbox()


def make_env(task_key: str, task: dict) -> MathToolEnv:
    """Environment factory (``EnvFactory``; registered as ``math_tool``): a :class:`MathToolEnv`
    with the tools config from ``TOOLS_CONFIG`` / ``TOOL_CONFIGS`` (:func:`load_tools_config`)."""
    return MathToolEnv(task_key, task, load_tools_config())
