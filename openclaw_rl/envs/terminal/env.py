"""``TerminalEnv``: one AgentBench OS episode in the sandbox, behind the Environment protocol.

Tools (OpenAI function schemas, :data:`TOOLS`; names as upstream terminal-rl, which uses CAMEL's
terminal toolkit: ``shell_exec``, ``shell_write_content_to_file``, ``shell_write_to_process``):

* ``shell_exec(command, timeout?)``: one command (``bash -c``) in ``/home/agent`` as the task's
  user; the observation is the output (head+tail truncated) and the exit code.
* ``shell_write_content_to_file(content, file_path)``: write a file (relative paths are under
  ``/home/agent``), no shell quoting involved.
* ``shell_write_to_process(id, command)``: type into a persistent interactive shell named
  ``id`` (made on first use, at most :data:`MAX_SESSIONS`): for REPLs, prompts, ``cd`` that lasts.
* ``submit_answer(answer)``: AgentBench's "answer" action for question tasks (the last one counts).

``evaluate()`` returns ``2 * acc - 1``: +1 when the task's check passes (:mod:`.checks`), else -1.
Bad model output never raises: a malformed call, an unknown tool or bad arguments get an
observation that says what is wrong, and the episode is still scored.
"""

from __future__ import annotations

import json
import logging
import posixpath
import threading

from openclaw_rl.agentic.sandbox import Sandbox, SandboxError, SandboxLimits
from openclaw_rl.envs.terminal import checks
from openclaw_rl.envs.terminal.convert import ANSWER_HINT

log = logging.getLogger(__name__)
MAX_SESSIONS = 4
MAX_TIMEOUT = 120.0


def _fn(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required}}}


TOOLS = [
    _fn("shell_exec", "Run one bash command in the task's Linux machine (working dir /home/agent) "
        "and return its output and exit code. No network.",
        {"command": {"type": "string", "description": "the bash command line"},
         "timeout": {"type": "number", "description": f"seconds before it is killed (default 30, max {int(MAX_TIMEOUT)})"}},
        ["command"]),
    _fn("shell_write_content_to_file", "Write text to a file (parents created); relative paths are "
        "under /home/agent. Use it for scripts and any multi-line content.",
        {"content": {"type": "string"}, "file_path": {"type": "string"}}, ["content", "file_path"]),
    _fn("shell_write_to_process", "Type a line into a persistent interactive shell session (made on "
        "first use; state such as cd and variables persists; send \\u0003 for Ctrl-C). Returns the "
        "new output.",
        {"id": {"type": "string", "description": "session name, e.g. \"main\""},
         "command": {"type": "string", "description": "the text to type (a newline is added)"}},
        ["id", "command"]),
    _fn("submit_answer", "Give the final answer to the task's question (the answer only).",
        {"answer": {"type": "string"}}, ["answer"]),
]
TOOL_NAMES = [t["function"]["name"] for t in TOOLS]


class TerminalEnv:
    """One episode of one AgentBench OS task.

    Args:
        task_key: e.g. ``"agentbench-os-dev-7"``.
        task: the dataset row's metadata, or a full task spec (``task.json``); when it lacks the
            spec (no ``"setup"``), the spec is loaded from the converted cache by ``task_key``.
        limits: sandbox limits (default :data:`checks.TERMINAL_LIMITS`).

    Raises:
        KeyError: unknown task key.
    """

    def __init__(self, task_key: str, task: dict | None = None, *, limits: SandboxLimits | None = None):
        if task and "setup" in task and "evaluation" in task:
            self.task = task
        else:
            from openclaw_rl.envs.terminal.data import load_task

            self.task = load_task(task_key)
        self.task_key = task_key
        self.limits = limits or checks.TERMINAL_LIMITS
        self.box: Sandbox | None = None
        self.answer: str | None = None
        self.expected: str | None = None
        self.setup_error: str | None = None
        self._sessions: dict = {}
        self._lock = threading.Lock()

    # ---- Environment protocol -----------------------------------------------------------------
    def reset(self) -> dict:
        """Start a fresh sandbox, run the task's setup; returns ``{"observation", "tools"}``.

        Raises:
            SandboxError: no sandbox on this machine. TaskSetupError: the task's setup failed.
        """
        self.close()
        self.answer, self.expected, self.setup_error = None, None, None
        self.box = checks.start_task(self.task, self.limits)
        self.expected = checks.expected_answer(self.task, self.box)
        return {"observation": self.task["instruction"] + ANSWER_HINT, "tools": TOOLS}

    def exec_tool(self, tool_call: dict) -> str:
        """Run one tool call ``{"name", "arguments": dict | JSON str}``; returns the observation."""
        try:
            name, args = self._parse(tool_call)
        except ValueError as exc:
            return f"Error: {exc}"
        if self.box is None:
            return "Error: the episode has not started (reset) or is closed."
        try:
            return getattr(self, f"_tool_{name}")(**args)
        except TypeError as exc:
            return f"Error: bad arguments for {name}: {exc}. Expected: {self._schema(name)}"
        except (SandboxError, OSError, RuntimeError) as exc:
            return f"Error: {name} failed: {exc}"

    def evaluate(self) -> float:
        """``2 * acc - 1`` from the task's check (+1 solved, -1 not; -1 when never started)."""
        if self.box is None:
            return -1.0
        try:
            ok = checks.passes(self.task, self.box, self.answer, self.expected)
        except Exception as exc:  # a broken check scores the episode as failed, loudly
            log.warning("check of %s failed to run: %s", self.task_key, exc)
            ok = False
        return 2.0 * float(ok) - 1.0

    def close(self) -> None:
        """Kill everything of the episode and remove its sandbox (idempotent)."""
        with self._lock:
            sessions, self._sessions = self._sessions, {}
            box, self.box = self.box, None
        for session in sessions.values():
            session.close()
        if box is not None:
            box.close()

    # ---- tool calls ---------------------------------------------------------------------------
    @staticmethod
    def _schema(name: str) -> str:
        fn = TOOLS[TOOL_NAMES.index(name)]["function"]["parameters"]
        return json.dumps({k: v.get("type") for k, v in fn["properties"].items()}) + f" required {fn['required']}"

    @staticmethod
    def _parse(tool_call) -> tuple[str, dict]:
        if not isinstance(tool_call, dict):
            raise ValueError(f"a tool call must be an object with name and arguments, got {type(tool_call).__name__}")
        call = tool_call.get("function", tool_call)  # accept the OpenAI message shape too
        name = call.get("name") if isinstance(call, dict) else None
        if not isinstance(name, str) or not name:
            raise ValueError("the tool call has no name")
        if name not in TOOL_NAMES:
            raise ValueError(f"unknown tool {name!r}; available: {', '.join(TOOL_NAMES)}")
        args = call.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError(f"arguments of {name} are not valid JSON ({exc.msg} at char {exc.pos})") from None
        if not isinstance(args, dict):
            raise ValueError(f"arguments of {name} must be a JSON object")
        return name, args

    def _tool_shell_exec(self, command: str, timeout: float | None = None) -> str:
        if not isinstance(command, str) or not command.strip():
            return "Error: shell_exec needs a non-empty string `command`."
        try:
            wall = min(MAX_TIMEOUT, float(timeout)) if timeout is not None else self.limits.wall_seconds
        except (TypeError, ValueError):
            return "Error: `timeout` must be a number of seconds."
        r = checks.run_as(self.box, self.task, command, timeout=max(0.1, wall))
        out = r.output if r.output.endswith("\n") or not r.output else r.output + "\n"
        if r.timed_out:
            return out + f"[timed out after {wall:g} s: the command and its children were killed]"
        return out + f"[exit code {r.returncode}]"

    def _tool_shell_write_content_to_file(self, content: str, file_path: str) -> str:
        if not isinstance(content, str) or not isinstance(file_path, str) or not file_path.strip():
            return "Error: shell_write_content_to_file needs string `content` and a non-empty `file_path`."
        path = posixpath.join(checks.AGENT_HOME, file_path) if not file_path.startswith("/") else file_path
        self.box.write_file(path, content, mode=0o644)
        user = checks.agent_user(self.task)
        if user != "root":
            self.box.run(f"chown {user} -- {json.dumps(path)}")
        return f"Wrote {len(content.encode())} bytes to {posixpath.normpath(path)}."

    def _tool_shell_write_to_process(self, id: str, command: str) -> str:  # noqa: A002 (upstream name)
        if not isinstance(id, str) or not id or not isinstance(command, str):
            return "Error: shell_write_to_process needs string `id` and `command`."
        with self._lock:
            session = self._sessions.get(id)
            if session is None or not session.alive:
                if len(self._sessions) >= MAX_SESSIONS and id not in self._sessions:
                    return f"Error: at most {MAX_SESSIONS} sessions ({', '.join(self._sessions)})."
                session = self._new_session()
                self._sessions[id] = session
        return session.send(command, timeout=min(MAX_TIMEOUT, self.limits.wall_seconds))

    def _new_session(self):
        session = self.box.shell()
        user = checks.agent_user(self.task)
        home = checks.AGENT_HOME if not self.task.get("user") else f"/home/{user}"
        if user != "root":
            session.send(f"exec runuser -u {user} -- env HOME={home} bash --noprofile --norc --noediting -i")
        session.send(f"cd {checks.AGENT_HOME}; export HOME={home}")
        return session

    def _tool_submit_answer(self, answer) -> str:
        if not isinstance(answer, (str, int, float)):
            return "Error: submit_answer needs a string `answer`."
        self.answer = str(answer)
        return f"Answer recorded: {self.answer!r}"


def make_env(task_key: str, task: dict) -> TerminalEnv:
    """Environment factory (``EnvFactory``) registered as ``terminal``."""
    return TerminalEnv(task_key, task)
