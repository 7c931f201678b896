"""Test access to the server launcher (see :mod:`openclaw_rl.server.launcher`)."""

from openclaw_rl.server.launcher import ServerHandle, free_port, running_server, start_server, stop_server

__all__ = ["ServerHandle", "free_port", "running_server", "start_server", "stop_server"]
