"""Listening for the environment servers (pool, router, GUI pool, SWE pool and exec server).

Each server binds its socket *once*, before it serves, and can write the port it got to a file
(``--port-file``): with ``--port 0`` the kernel picks a free port and whoever started the server
(a launch script, a test) reads it from that file. Nothing else can take the port between the
choice and the bind, which a "pick a free port, then pass it" scheme cannot promise (another
process, e.g. a Ray metrics exporter, may bind it in between and answer the readiness probe).
"""
from __future__ import annotations

import argparse
import logging
import os
import socket
from pathlib import Path


def port_number(text: str) -> int:
    """An argparse type: a TCP port 0-65535 (0: any free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {text}")
    return value


def add_port_file_flag(p: argparse.ArgumentParser) -> None:
    """Add ``--port-file PATH``: where the server writes the port it listens on (after binding)."""
    p.add_argument("--port-file", default=None, metavar="PATH",
                   help="write the port listened on to PATH once bound (with --port 0: a free port)")


def write_port_file(path: str | os.PathLike, port: int) -> None:
    """Write ``port`` (decimal, newline) to ``path`` atomically: a reader sees the whole number or
    no file. Raises ``OSError`` when the folder cannot be written."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{port}\n")
    os.replace(tmp, target)


def check_listen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> socket.socket:
    """Start-up checks shared by the environment servers, then logging; returns the bound,
    listening socket to serve on (:func:`serve`).

    A non-loopback ``--host`` needs ``--api-key`` (or ``--insecure-no-auth``); the address must be
    free. ``args.port`` becomes the port bound (the kernel's choice for ``--port 0``), and
    ``--port-file`` (when the parser has it and it is given) receives that port. Errors go through
    ``parser.error`` (one line, exit 2)."""
    from openclaw_rl.server.config import is_loopback

    if not is_loopback(args.host) and not args.api_key and not args.insecure_no_auth:
        parser.error(f"--host {args.host} is reachable from other machines: give --api-key KEY (or POOL_API_KEY), "
                     "or --insecure-no-auth to serve without authentication")
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        parser.error(f"cannot listen on {args.host}:{args.port}: {exc}")
    args.port = sock.getsockname()[1]
    if getattr(args, "port_file", None):
        try:
            write_port_file(args.port_file, args.port)
        except OSError as exc:
            sock.close()
            parser.error(f"--port-file {args.port_file}: {exc}")
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return sock


def serve(app, sock: socket.socket, log_level: str, graceful_s: float = 10.0) -> None:
    """Serve the ASGI ``app`` with uvicorn on the already bound ``sock`` until SIGTERM/SIGINT
    (uvicorn's graceful shutdown, at most ``graceful_s`` seconds for requests in flight)."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=graceful_s)
    uvicorn.Server(config).run(sockets=[sock])
