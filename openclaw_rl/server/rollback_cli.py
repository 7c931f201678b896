"""``openclaw-rl rollback --to V`` and ``openclaw-rl versions``: the server's served weight
versions from the command line (``POST /admin/rollback``, ``GET /admin/versions``;
:mod:`openclaw_rl.server.versions`)."""

from __future__ import annotations

import argparse
import json
import os
import sys

import httpx

__all__ = ["add_server_flags", "admin_call", "rollback_main", "versions_main"]


def add_server_flags(p: argparse.ArgumentParser) -> None:
    """``--url`` and ``--admin-api-key`` of the admin commands."""
    p.add_argument("--url", default=os.environ.get("OPENCLAW_SERVER_URL", "http://127.0.0.1:30000"),
                   help="the server's root URL (env OPENCLAW_SERVER_URL)")
    p.add_argument("--admin-api-key", default=os.environ.get("OPENCLAW_ADMIN_API_KEY") or os.environ.get("OPENCLAW_API_KEY"),
                   help="the server's admin key, else its API key (env OPENCLAW_ADMIN_API_KEY, OPENCLAW_API_KEY)")


def admin_call(method: str, url: str, key: str | None, body: dict | None = None) -> dict:
    """One admin request; the server's error message as a ValueError (one line)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        r = httpx.request(method, url, headers=headers, json=body, timeout=900)
    except httpx.TransportError as exc:
        raise ValueError(f"cannot reach the server at {url}: {exc}") from None
    try:
        data = r.json()
    except ValueError:
        raise ValueError(f"{url} answered {r.status_code} without JSON") from None
    if r.status_code != 200:
        raise ValueError(f"{r.status_code}: {data.get('error', {}).get('message', data)}")
    return data


def rollback_main(argv: list[str]) -> int:
    """``openclaw-rl rollback --to V``: serve version V again; prints one line; returns 0.

    Raises:
        ValueError: bad flags, an unreachable server, or the server's refusal (one line).
    """
    p = argparse.ArgumentParser(prog="openclaw-rl rollback", description="Serve an earlier weight version again.")
    p.add_argument("--to", type=int, required=True, metavar="V", help="the version to serve (openclaw-rl versions)")
    add_server_flags(p)
    a = p.parse_args(argv)
    out = admin_call("POST", a.url.rstrip("/") + "/admin/rollback", a.admin_api_key, {"version": a.to})
    print(f"serving weight version {out['weight_version']}")
    return 0


def versions_main(argv: list[str]) -> int:
    """``openclaw-rl versions``: the served versions as a table (``--json``: the raw list); returns 0."""
    p = argparse.ArgumentParser(prog="openclaw-rl versions", description="List the server's weight versions.")
    p.add_argument("--json", action="store_true")
    add_server_flags(p)
    a = p.parse_args(argv)
    out = admin_call("GET", a.url.rstrip("/") + "/admin/versions", a.admin_api_key)
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{'version':>7}  {'status':<11}  {'gate':<6}  {'turns':>5}  folder")
    for v in out["data"]:
        gate = v["gate"].get("gate/passed")
        gate = "-" if gate is None else ("pass" if gate else "FAIL")
        print(f"{v['version']:>7}  {v['status']:<11}  {gate:<6}  {v.get('turns_sampled', '-'):>5}  {v['model_path']}")
    return 0


if __name__ == "__main__":
    sys.exit(rollback_main(sys.argv[1:]))
