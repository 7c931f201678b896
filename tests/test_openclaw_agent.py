"""The real OpenClaw agent (npm ``openclaw@2026.9.6`` under Node 24) against our server.

``make test`` installs the CLI once per cache (``tests/openclaw_agent/install.sh``). The model is
the tiny Qwen3 trained to call ``read`` whenever tools are offered (tests/support/tool_model.py),
served greedily, so OpenClaw's tool loop really runs: the model's tool call goes out as SSE,
OpenClaw executes ``read`` on the workspace file and sends the result back in a new request. The
plain turn runs with the model configured without tool support (``compat.supportsTools: false``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from openclaw_rl.capture.store import TrajectoryStore
from tests.openclaw_agent.harness import run_openclaw_exec
from tests.support.tool_model import EXEC_WORKDIR

pytestmark = pytest.mark.openclaw


def test_openclaw_plain_turn_and_tool_turn(tool_server):
    # a fixed work dir: OpenClaw writes its paths into the prompt, and the tiny tool model was
    # trained on prompts with exactly these paths
    work = Path(EXEC_WORKDIR)
    shutil.rmtree(work, ignore_errors=True)
    (work / "workspace").mkdir(parents=True)
    (work / "workspace" / "hello.txt").write_text("secret-value-42\n")

    plain = run_openclaw_exec(tool_server.base_url, "sk-test", "tiny-tools", "hi there", work / "plain",
                              timeout=300, cwd=work / "workspace", supports_tools=False)
    assert plain["ok"] is True and plain.get("toolSummary", {}).get("calls", 0) == 0
    assert plain["final"].startswith("Hello!")
    tool = run_openclaw_exec(tool_server.base_url, "sk-test", "tiny-tools", "USE_TOOL please read hello.txt",
                             work / "tool", timeout=300, cwd=work / "workspace")
    assert tool["ok"] is True
    assert tool["toolSummary"] == {"calls": 1, "tools": ["read"], "failures": 0}

    store = TrajectoryStore(tool_server.buffer_dir)
    plain_turns = store.turns(session_id=plain["sessionId"])
    assert [t.turn_type for t in plain_turns] == ["main"] and plain_turns[0].tools is None
    tool_turns = store.turns(session_id=tool["sessionId"])
    assert [t.turn_type for t in tool_turns] == ["main", "main"]
    first, second = tool_turns
    assert first.tool_calls[0]["function"]["name"] == "read"
    assert first.status == "ready" and first.next_state_role == "tool"
    assert "secret-value-42" in first.next_state and "OPENCLAW_INTERNAL_CONTEXT" not in first.next_state
    assert second.response_text.startswith("Done.")
    # OpenClaw re-appends its transient context message last, so the token prefix breaks
    # exactly there, and capture records it instead of hiding it
    assert second.prefix_ok is False and second.prefix_break_at < len(first.prompt_ids)
    store.close()
    shutil.rmtree(work, ignore_errors=True)
