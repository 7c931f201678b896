"""The TypeScript example (``examples/typescript/chat.ts``) under Node 24 with the ``openai`` npm
package, driven against the real server on the tiny model.

``tests/openclaw_agent/install.sh example examples/typescript`` installs the example's locked
dependencies (``npm ci``) once per cache (``make test`` runs it before the suite, outside the
network namespace). The example runs as a user runs it (``node chat.ts``, the server's URL and
key in ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``): a forced tool call whose result it sends back, a
streamed answer, and a ``response_format`` json_schema turn without tools. It sends no capture
headers; the three requests must be recorded as one session of trainable main turns, each linked
to the next state the client sent, token in, token out (the checks of
``tests/test_agent_clients.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.openclaw_agent.harness import INSTALL_SH
from tests.support.sessions import one_session

pytestmark = pytest.mark.node

CITIES = ["Paris", "Oslo"]
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "typescript"


def _install() -> tuple[str, str]:
    """The Node 24 binary and the example's ``node_modules`` (cached install)."""
    proc = subprocess.run(["bash", str(INSTALL_SH), "example", str(EXAMPLE)], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    node, modules = proc.stdout.split()[-2:]
    return node, modules


def test_typescript_example_is_one_recorded_session(tiny_server, tmp_path):
    """``node chat.ts`` against the server: it gets a call to ``get_weather`` with a listed city,
    a streamed answer and JSON of its schema; the server recorded one session of three main
    turns: the call (finish ``tool_calls``) linked to the tool result, the streamed answer linked
    to the user's next message, the constrained JSON turn (its prompt changes the system prompt,
    since no tools are offered: the break is detected)."""
    node, modules = _install()
    (tmp_path / "chat.ts").write_text((EXAMPLE / "chat.ts").read_text())
    (tmp_path / "package.json").write_text((EXAMPLE / "package.json").read_text())
    (tmp_path / "node_modules").symlink_to(modules)  # Node resolves `openai` next to the script
    system = f"You check the weather ({uuid.uuid4().hex})."
    env = {**os.environ, "OPENAI_BASE_URL": tiny_server.base_url, "OPENAI_API_KEY": "sk-test", "MODEL": "m",
           "SYSTEM_PROMPT": system, "MAX_TOKENS": "40", "SEED": "1", "NODE_NO_WARNINGS": "1"}
    proc = subprocess.run([node, "chat.ts"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["call"]["name"] == "get_weather" and out["call"]["args"]["city"] in CITIES
    assert out["weather"]["city"] in CITIES and isinstance(out["weather"]["sunny"], bool)

    called, answered, structured = one_session(tiny_server, system, 3)
    assert [t.completion_id for t in (called, answered, structured)] == out["ids"]
    assert called.finish_reason == "tool_calls" and called.tool_calls[0]["function"]["name"] == "get_weather"
    weather = "rain, 9 C" if out["call"]["args"]["city"] == "Oslo" else "sunny, 21 C"
    assert (called.next_state_role, called.next_state) == ("tool", f"[tool {out['call']['id']}] {weather}")
    assert answered.response_text == out["answer"]
    assert (answered.next_state_role, answered.next_state) == ("user", "Now as JSON, please.")
    assert structured.constrained and json.loads(structured.response_text) == out["weather"]
    assert structured.prefix_ok is False and structured.tools is None
