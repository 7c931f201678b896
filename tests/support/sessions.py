"""Recorded sessions for offline training tests (``DATA_PATH``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx


def record_sessions(server, out: Path, sessions=("s1", "s2", "s3"), turns: int = 2,
                    reply: str = "thanks {i}") -> Path:
    """Talk to ``server`` (sessions of ``turns`` turns; after each reply the user answers ``reply``,
    formatted with the turn index ``i``) and export these sessions of the store (the server is
    shared by tests) to ``out`` (``openclaw-rl export`` format); returns ``out``."""
    for sid in sessions:
        messages = [{"role": "user", "content": f"hello {sid}"}]
        for i in range(turns):
            r = httpx.post(server.base_url + "/chat/completions", timeout=120,
                           headers={"Authorization": f"Bearer {server.api_key}", "X-Session-Id": sid},
                           json={"messages": messages, "max_tokens": 6})
            r.raise_for_status()
            messages += [r.json()["choices"][0]["message"], {"role": "user", "content": reply.format(i=i)}]
    subprocess.run([sys.executable, "-m", "openclaw_rl.cli", "export", "--rl-buffer-dir",
                    str(server.buffer_dir), "--out", str(out)], check=True)
    lines = [line for line in out.read_text().splitlines() if json.loads(line)["session_id"] in sessions]
    out.write_text("".join(line + "\n" for line in lines))
    return out
