"""A persistent interactive bash inside a :class:`~openclaw_rl.agentic.sandbox.Sandbox`.

The shell runs on a pseudo-terminal (so interactive programs, ``read -p`` prompts and REPLs
behave as in a terminal) with echo off and readline off (``--noediting``), so the text returned
is what programs printed, not the keystrokes. Its prompt starts with an invisible marker byte
(ASCII RS, ``\\x1e``) that tells :meth:`ShellSession.send` the shell is idle again; the marker is
removed from the text returned.

When :meth:`ShellSession.send` returns (the rules, in order):

* the shell printed its prompt and nothing more came for ``_IDLE_S`` (0.1 s): the command ended;
* something else printed and then went quiet for ``_QUIET_S`` (1.0 s): an interactive program is
  probably waiting for input (a REPL, a password prompt);
* ``timeout`` seconds passed: the command still runs; it keeps running in the shell (send
  ``"\\x03"``, Ctrl-C, to interrupt it).

Lines longer than the terminal's 4095-byte line limit are cut by the kernel; write files with
:meth:`Sandbox.write_file` instead.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import termios
import threading
import time

from openclaw_rl.agentic._output import HeadTail

_MARK = b"\x1e"
_PS1 = "\x1e\\u@sandbox:\\w\\$ "
_IDLE_S = 0.1
_QUIET_S = 1.0


class ShellSession:
    """An interactive ``bash`` on a pty inside the sandbox; made by :meth:`Sandbox.shell`.

    Args:
        sandbox: the owning sandbox (its limits, namespaces and cgroup apply).

    Raises:
        SandboxError: the sandbox is closed.
    """

    def __init__(self, sandbox):
        self._limit = sandbox.limits.output_bytes
        self._lock = threading.Lock()
        master, slave = pty.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~(termios.ECHO | termios.ECHONL)
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        argv = sandbox._argv(["setsid", "-c", "/bin/bash", "--noprofile", "--norc", "--noediting",
                              "-i"], env={"PS1": _PS1, "PS2": "> "}, cwd=None, user="root",
                             new_session=False)
        try:
            # not a new session: a session leader here would own the pty, and the shell inside
            # (no CAP_SYS_ADMIN) could not make it its controlling terminal
            self._proc = sandbox._spawn(argv, own_session=False, stdin=slave, stdout=slave,
                                        stderr=slave)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self._sandbox = sandbox
        self._master = master
        self._closed = False
        self._read(time.monotonic() + 20.0)  # swallow the first prompt

    def _read(self, deadline: float) -> HeadTail:
        sink = HeadTail(self._limit)
        tail = b""
        last = time.monotonic()
        while True:
            now = time.monotonic()
            idle = tail.rfind(_MARK) >= 0 and b"\n" not in tail[tail.rfind(_MARK):]
            wait_for = _IDLE_S if idle else (_QUIET_S if sink.total else None)
            if wait_for is not None and now - last >= wait_for:
                return sink
            if now >= deadline:
                return sink
            wait = deadline - now if wait_for is None else min(deadline - now, last + wait_for - now)
            ready, _, _ = select.select([self._master], [], [], max(0.0, wait))
            if not ready:
                continue
            try:
                data = os.read(self._master, 65536)
            except OSError:
                data = b""
            if not data:  # the shell exited
                return sink
            sink.add(data)
            tail = (tail + data)[-4096:]
            last = time.monotonic()

    def send(self, text: str, *, timeout: float = 5.0) -> str:
        """Type ``text`` (a newline is added if missing) and return what the shell printed.

        Args:
            text: input for the shell or for the program reading the terminal (``"\\x03"``: Ctrl-C).
            timeout: most seconds to wait for output (see the module docstring for when it returns).

        Returns:
            The output (``\\r\\n`` as ``\\n``, prompt marker removed, head+tail truncated to the
            sandbox's ``output_bytes``); ``"[shell exited]"`` appended once the shell has ended.

        Raises:
            RuntimeError: the session is closed.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("the shell session is closed")
            if not text.endswith("\n") and not text.endswith("\x03") and not text.endswith("\x04"):
                text += "\n"
            data = text.encode()
            deadline = time.monotonic() + max(0.0, float(timeout))
            while data:
                _, writable, _ = select.select([], [self._master], [], max(0.0, deadline - time.monotonic()))
                if not writable:
                    break
                try:
                    data = data[os.write(self._master, data[:1024]):]
                except OSError:
                    break
            sink = self._read(deadline)
            out = sink.text().replace("\r\n", "\n").replace(_MARK.decode(), "")
            if self._proc.poll() is not None:
                out += "\n[shell exited]"
            return out

    @property
    def alive(self) -> bool:
        """Whether the shell process still runs."""
        return not self._closed and self._proc.poll() is None

    def close(self) -> None:
        """Kill the shell and everything it started (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._proc.wait()
        os.close(self._master)
        self._sandbox._forget(self._proc)
