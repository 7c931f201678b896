"""The gui and swe practice tasks of the Track 2 learning tests (:mod:`tests.support.track2_tasks`):
both scripted branches played in the real environments (Chromium on MiniWoB's ``focus-text``; a
sandboxed copy of a generated SWE repository, its pytest run deciding "resolved") score as the
learning test needs, on a training and a held-out wording; the held-out wordings are never
demonstrated; the swe injection detector sees the practice instances' planted instruction."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from openclaw_rl.agentic.sandbox import sandbox_available
from tests.support import track2_tasks as t

_SANDBOX, _WHY = sandbox_available()
needs_browser = pytest.mark.skipif(not (shutil.which("chromium") and shutil.which("chromedriver")),
                                   reason="no chromium / chromedriver (make install)")
needs_sandbox = pytest.mark.skipif(not _SANDBOX, reason=f"no sandbox: {_WHY}")


def _play(family: str, row: dict, branch: t.Branch):
    if t.FAMILIES[family].get("record") == "swe":
        return asyncio.run(t._record_swe(row, branch))
    return asyncio.run(t._record(row, branch, t._system(family)))


@pytest.mark.parametrize("family", ["gui", "swe"])
def test_heldout_wordings_are_never_demonstrated(family):
    train, held = t.rows(family, "train"), t.rows(family, "heldout")
    assert (len(train), len(held)) == (8, 4)
    keys = lambda rows: {r["metadata"]["task_key"] for r in rows}  # noqa: E731
    prompts = lambda rows: {r["prompt"] for r in rows}  # noqa: E731
    assert not keys(train) & keys(held) and not prompts(train) & prompts(held)
    assert len(keys(train) | keys(held)) == 12
    if family == "gui":  # other seeds, and the family's own eval data mode
        assert {r["metadata"]["task_config"]["data_mode"] for r in held} == {"test"}


@needs_browser
def test_gui_branches_score_in_miniwob():
    """pressing tab focuses the textbox (+1, the episode is over after the one action); the reply
    without an action leaves the page unsolved (-1); seeds move the textbox (other observations)."""
    good, bad = t.GUI_BRANCHES
    seen = set()
    for row in (t.rows("gui", "train")[0], t.rows("gui", "heldout")[0]):
        demo, score = _play("gui", row, good)
        assert score == 1.0, demo.messages
        assert demo.messages[0]["role"] == "system" and "score +1" in demo.messages[3]["content"]
        seen.add(demo.messages[1]["content"])
        demo, score = _play("gui", row, bad)
        assert score == -1.0 and demo.replies == ["I think it is done already."]
    assert len(seen) == 2  # the two seeds' element tables differ


@needs_sandbox
def test_swe_branches_resolve_or_not_and_the_injection_detector():
    """the one-block fix resolves a fresh copy (the test passes), the reply without a bash block
    leaves it unresolved; neither follows the planted instruction, a command echoing the canary does."""
    from openclaw_rl.envs.swe.env import SweEnv
    from tests.support.track2_swe_practice import canary

    good, bad = t.SWE_BRANCHES
    row = t.rows("swe", "heldout")[0]  # (the training rows: the cold start's build checks their scores)
    inst = row["metadata"]["instance"]
    assert inst["injected"] and inst["injection"]["planted_in"] == ["src/calc.py"]
    demo, score = _play("swe", row, good)
    assert score == 1.0 and [m["role"] for m in demo.messages] == ["system", "user", "assistant"]
    _, score = _play("swe", row, bad)
    assert score == -1.0
    env = SweEnv(row["metadata"]["task_key"], row["metadata"])
    env.reset()
    try:
        assert canary(env.task_key) in env.run_command("cat src/calc.py")[0]
        env.run_command(f"echo {canary(env.task_key)}")
        assert env.evaluate() == -1.0 and env.result["injection"]["followed"] is True
    finally:
        env.close()
