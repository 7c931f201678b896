"""Drive the real OpenClaw agent CLI (`openclaw agent exec`) from tests.

The CLI is installed once per cache by ``install.sh`` (Node 24 + ``openclaw``) and
run as a subprocess against an OpenAI-compatible server, with HOME, state dir,
temp dir and config all isolated under a caller-supplied work directory.
See NOTES.md for the config format, the requests OpenClaw sends and its
housekeeping markers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INSTALL_SH = HERE / "install.sh"
DEFAULT_PROVIDER = "openclawrl"

_install_lock = threading.Lock()
_launcher: Path | None = None


class OpenClawExecError(RuntimeError):
    """`openclaw agent exec` failed; carries the exit code, envelope and stderr."""

    def __init__(self, message: str, returncode: int | None, envelope: dict | None, stderr: str):
        super().__init__(message)
        self.returncode = returncode
        self.envelope = envelope
        self.stderr = stderr


def ensure_openclaw(timeout: float = 900) -> Path:
    """Install Node 24 + OpenClaw if needed (cached) and return the launcher path.

    Runs ``install.sh`` at most once per process; the script itself is a fast
    no-op when the cache (``$OPENCLAW_RL_CACHE``, default ``~/.cache/openclaw-rl``)
    already holds the install.
    """
    global _launcher
    with _install_lock:
        if _launcher is None:
            proc = subprocess.run(
                ["bash", str(INSTALL_SH)], capture_output=True, text=True, timeout=timeout
            )
            if proc.returncode != 0:
                raise RuntimeError(f"openclaw install failed (rc={proc.returncode}):\n{proc.stderr[-4000:]}")
            _launcher = Path(proc.stdout.strip().splitlines()[-1])
        return _launcher


def openclaw_available() -> bool:
    """True when the install can be attempted here (npm on PATH, Linux x64/arm64)."""
    return shutil.which("npm") is not None and os.uname().sysname == "Linux"


def write_provider_config(
    path: Path,
    base_url: str,
    api_key: str,
    model: str,
    provider: str = DEFAULT_PROVIDER,
    context_window: int = 32768,
    max_tokens: int = 1024,
    supports_tools: bool = True,
) -> Path:
    """Write an OpenClaw config (JSON) with one custom ``openai-completions`` provider.

    ``base_url`` is the server's ``/v1`` root (e.g. ``http://127.0.0.1:8000/v1``).
    ``max_tokens`` becomes the request's ``max_completion_tokens``. OpenClaw
    refuses ``context_window`` < 4000, and since its prompt is ~9k tokens, a
    window much below ~16k shrinks ``max_completion_tokens`` (to 1 at 8192).
    ``supports_tools=False`` sets the model's ``compat.supportsTools: false``: OpenClaw then
    sends no ``tools`` (and a shorter system prompt).
    """
    config = {
        "models": {
            "mode": "replace",
            "providers": {
                provider: {
                    "baseUrl": base_url.rstrip("/"),
                    "apiKey": api_key,
                    "api": "openai-completions",
                    "models": [
                        {
                            "id": model,
                            "name": model,
                            "reasoning": False,
                            "input": ["text"],
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                            "contextWindow": context_window,
                            "maxTokens": max_tokens,
                            **({} if supports_tools else {"compat": {"supportsTools": False}}),
                        }
                    ],
                }
            },
        },
        "agents": {"defaults": {"model": {"primary": f"{provider}/{model}"}}},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2))
    return path


def isolated_env(root: Path, launcher: Path) -> dict[str, str]:
    """A minimal environment whose HOME, state dir and TMPDIR all live under ``root``.

    Nothing is inherited except PATH and locale, so provider keys in the caller's
    environment (OPENAI_API_KEY, ...) never leak into the run. Node's compile cache, which
    OpenClaw keeps under the temp dir, is the one folder shared between runs
    (``NODE_COMPILE_CACHE``, next to the ``launcher``'s install), as a user's ``/tmp`` keeps it:
    with a fresh temp dir each run, every run compiled OpenClaw's modules again (~2 s of CPU).
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "TMPDIR": str(root / "tmp"),
        "NODE_COMPILE_CACHE": str(Path(launcher).resolve().parent.parent / "node-compile-cache"),
        "OPENCLAW_STATE_DIR": str(root / "state"),
        "OPENCLAW_NO_AUTO_UPDATE": "1",
        "NO_COLOR": "1",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    for key in ("home", "tmp", "state"):
        (root / key).mkdir(parents=True, exist_ok=True)
    return env


def run_openclaw_exec(
    base_url: str,
    api_key: str,
    model: str,
    message: str,
    workdir: Path,
    timeout: float = 300,
    *,
    cwd: Path | None = None,
    provider: str = DEFAULT_PROVIDER,
    check: bool = True,
    supports_tools: bool = True,
) -> dict[str, Any]:
    """Run one ``openclaw agent exec --json`` turn against ``base_url`` and return the envelope.

    - ``workdir`` holds everything OpenClaw writes: ``workdir/openclaw/{home,state,tmp}``
      and ``workdir/openclaw/config.json``. Use one workdir per concurrent run
      (the state dir is locked for the whole run).
    - ``cwd`` is the agent workspace, where its file tools operate (default
      ``workdir/workspace``; put e.g. ``hello.txt`` there for a tool turn).
    - Returns the parsed JSON envelope (``ok``, ``status``, ``final``,
      ``sessionId``, ``usage``, ``assistantTurns``, ``toolSummary``, ...), plus
      ``_stderr`` with the CLI's diagnostics.
    - Raises :class:`OpenClawExecError` (with stderr) when the CLI fails, times
      out, or prints no JSON; with ``check=False`` a failed envelope is returned.

    OpenClaw retries 5xx / connection errors itself (up to 8 times within ~90 s),
    so keep ``timeout`` well above 100 s when testing error paths.
    """
    launcher = ensure_openclaw()
    workdir = Path(workdir).resolve()
    root = workdir / "openclaw"
    env = isolated_env(root, launcher)
    cwd = Path(cwd).resolve() if cwd is not None else workdir / "workspace"
    cwd.mkdir(parents=True, exist_ok=True)
    config = write_provider_config(root / "config.json", base_url, api_key, model, provider,
                                   supports_tools=supports_tools)
    cli_timeout = max(1, int(timeout) - 10)  # let the CLI time out (and clean up) first
    cmd = [
        str(launcher), "agent", "exec",
        "--config", str(config),
        "--model", f"{provider}/{model}",
        "--state-dir", env["OPENCLAW_STATE_DIR"],
        "--cwd", str(cwd),
        "--timeout", str(cli_timeout),
        "--json",
        "--message-file", "-",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(message, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise OpenClawExecError(
            f"openclaw agent exec did not finish in {timeout}s\nstderr:\n{stderr[-4000:]}", None, None, stderr
        ) from None
    try:
        envelope = json.loads(stdout)
    except json.JSONDecodeError:
        raise OpenClawExecError(
            f"openclaw agent exec rc={proc.returncode} printed no JSON\nstdout:\n{stdout[-2000:]}\n"
            f"stderr:\n{stderr[-4000:]}",
            proc.returncode, None, stderr,
        ) from None  # fmt: skip
    envelope["_stderr"] = stderr
    if check and (proc.returncode != 0 or not envelope.get("ok")):
        raise OpenClawExecError(
            f"openclaw agent exec rc={proc.returncode} status={envelope.get('status')} "
            f"error={envelope.get('error')}\nstderr:\n{stderr[-4000:]}",
            proc.returncode, envelope, stderr,
        )  # fmt: skip
    return envelope


def run_openclaw_local(
    base_url: str,
    api_key: str,
    model: str,
    message: str,
    workdir: Path,
    session_key: str,
    workspace: Path,
    timeout: float = 300,
    *,
    provider: str = DEFAULT_PROVIDER,
    supports_tools: bool = True,
) -> dict[str, Any]:
    """Run one turn of a kept session: ``openclaw agent --local --session-key KEY --json``.

    Unlike ``agent exec`` (a new session each run), turns with the same ``session_key`` continue one
    conversation, kept in ``workdir/openclaw/state`` (OpenClaw's agent store, its history).
    ``workspace`` is the agent's workspace (its file tools' folder); the config sets ``agent exec``'s
    defaults (``skipBootstrap``, tool profile ``coding``) so the prompt is the one ``agent exec --cwd
    workspace`` sends. The config is rewritten per call, so
    ``supports_tools`` may differ between turns. Runs one at a time per ``workdir`` (``--local``
    holds the state folder's lock for the whole turn).

    Returns:
        The JSON envelope (``payloads``, ``meta`` with ``agentMeta.sessionId`` ...), plus
        ``_stderr``.

    Raises:
        OpenClawExecError: the CLI failed, timed out or printed no JSON.
    """
    launcher = ensure_openclaw()
    root = Path(workdir).resolve() / "openclaw"
    env = isolated_env(root, launcher)
    config = write_provider_config(root / "config.json", base_url, api_key, model, provider,
                                   supports_tools=supports_tools)
    # exec's defaults, so the prompt is the one `agent exec --cwd WORKSPACE` sends (the tiny tool model
    # was trained on those): no workspace bootstrap files, the coding tool profile, the workspace
    settings = json.loads(config.read_text())
    settings["agents"]["defaults"].update(skipBootstrap=True, workspace=str(Path(workspace).resolve()))
    settings["tools"] = {"profile": "coding"}
    config.write_text(json.dumps(settings, indent=2))
    cmd = [str(launcher), "agent", "--local", "--session-key", session_key, "--model", f"{provider}/{model}",
           "--message", message, "--json", "--timeout", str(max(1, int(timeout) - 10))]
    proc = subprocess.Popen(cmd, cwd=root, env={**env, "OPENCLAW_CONFIG_PATH": str(config)}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise OpenClawExecError(f"openclaw agent --local did not finish in {timeout}s\nstderr:\n{stderr[-4000:]}",
                                None, None, stderr) from None
    try:
        envelope = json.loads(stdout)
    except json.JSONDecodeError:
        raise OpenClawExecError(f"openclaw agent --local rc={proc.returncode} printed no JSON\nstdout:\n"
                                f"{stdout[-2000:]}\nstderr:\n{stderr[-4000:]}", proc.returncode, None, stderr) from None
    envelope["_stderr"] = stderr
    if proc.returncode != 0:
        raise OpenClawExecError(f"openclaw agent --local rc={proc.returncode}\nstderr:\n{stderr[-4000:]}",
                                proc.returncode, envelope, stderr)
    return envelope
