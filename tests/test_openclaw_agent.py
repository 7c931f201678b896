"""The real OpenClaw agent (npm ``openclaw@2026.9.6`` under Node 24) against our server.

``make test`` installs the CLI once per cache (``tests/openclaw_agent/install.sh``). The model is
the tiny Qwen3 trained to call ``read`` whenever tools are offered (tests/support/tool_model.py),
served greedily. The plain turn runs with the model configured without tool support
(``compat.supportsTools: false``); the tool turn lets OpenClaw's tool loop run: the model's tool
call goes out as SSE, OpenClaw executes ``read`` on the workspace file and sends the result back.
"""

from __future__ import annotations


import pytest

from openclaw_rl.capture.store import TrajectoryStore
from tests.openclaw_agent.harness import run_openclaw_exec

pytestmark = pytest.mark.openclaw


def test_openclaw_plain_turn(tool_server, work):
    plain = run_openclaw_exec(tool_server.base_url, "sk-test", "tiny-tools", "hi there", work / "plain",
                              timeout=300, cwd=work / "workspace", supports_tools=False)
    assert plain["ok"] is True and plain.get("toolSummary", {}).get("calls", 0) == 0
    assert plain["final"].startswith("Hello!")
    store = TrajectoryStore(tool_server.buffer_dir)
    (turn,) = store.turns(session_id=plain["sessionId"])  # no session header: the runtime line
    assert turn.turn_type == "main" and turn.tools is None and turn.response_text.startswith("Hello!")
    assert turn.status == "awaiting_next" and len(turn.prompt_ids) > 1000
    store.close()


def test_openclaw_tool_turn(tool_server, work):
    tool = run_openclaw_exec(tool_server.base_url, "sk-test", "tiny-tools", "please read hello.txt",
                             work / "tool", timeout=300, cwd=work / "workspace")
    assert tool["ok"] is True
    assert tool["toolSummary"] == {"calls": 1, "tools": ["read"], "failures": 0}
    store = TrajectoryStore(tool_server.buffer_dir)
    first, second = store.turns(session_id=tool["sessionId"])
    assert first.tool_calls[0]["function"]["name"] == "read"
    assert first.status == "ready" and first.next_state_role == "tool"
    assert "secret-value-42" in first.next_state and "OPENCLAW_INTERNAL_CONTEXT" not in first.next_state
    assert second.response_text.startswith("Done.")
    # OpenClaw re-appends its transient context message last, so the token prefix breaks
    # exactly there, and capture records it instead of hiding it
    assert second.prefix_ok is False and second.prefix_break_at < len(first.prompt_ids)
    store.close()
