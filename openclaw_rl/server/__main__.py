"""``python -m openclaw_rl.server``: run the intercept server (see ``--help``)."""

from __future__ import annotations

import logging
import socket
import sqlite3
import sys


def main(argv: list[str] | None = None) -> int:
    """Parse flags, build the server and serve until interrupted; returns the exit code."""
    import uvicorn

    from openclaw_rl.engine import EngineError
    from openclaw_rl.server import build_server, parse_server_args
    from openclaw_rl.server.shutdown import GracefulServer

    config = parse_server_args(argv)
    with socket.socket() as probe:  # fail fast, before loading the model
        try:
            probe.bind((config.host, config.port))
        except OSError as exc:
            print(f"openclaw-rl serve: error: cannot listen on {config.host}:{config.port}: {exc}", file=sys.stderr)
            return 2
    logging.basicConfig(level=config.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app, _engine, store = build_server(config)
    except (ValueError, OSError, sqlite3.DatabaseError, EngineError) as exc:
        print(f"openclaw-rl serve: error: {exc}", file=sys.stderr)
        return 2
    where = f" recording to {store.path}" if store else ""
    logging.getLogger("openclaw_rl").info("serving %s on http://%s:%d/v1%s", config.model_name,
                                          config.host, config.port, where)
    # SIGTERM / Ctrl-C: drain, cut what is left after --shutdown-grace-seconds, close the store
    # (openclaw_rl.server.shutdown), exit 0
    server = GracefulServer(uvicorn.Config(app, host=config.host, port=config.port, log_level=config.log_level),
                            app.state.drain)
    server.run()
    logging.getLogger("openclaw_rl").info("server stopped%s", "; store closed" if store else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
