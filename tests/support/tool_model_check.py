"""The behaviour check a freshly built tool model must pass before it is cached.

A model trained for tests can come out differently on another machine (other CPU kernels give
other float rounding, and 400+ optimizer steps amplify it). So the build is verified: for every
check case (the exact prompts the tests send, plus held-out variations of the OpenClaw prompts
that the training data never contained), the expected reply is scored with teacher forcing in one
forward pass, and at every reply position the expected token must beat every other token by at
least ``MIN_MARGIN`` logits. Greedy decoding then provably produces the expected reply, and the
margin keeps it so under any float noise. A model that fails gets more training rounds; if it
still fails, the build raises :class:`ToolModelCheckError` naming each failing case.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: smallest allowed logit gap between the expected token and the runner-up, at every position
MIN_MARGIN = 2.0


class ToolModelCheckError(RuntimeError):
    """The tool model does not behave as the tests need (the message names the failing cases)."""


@dataclass(frozen=True)
class CheckCase:
    """One prompt (messages + tools) and the reply greedy decoding must produce."""

    name: str
    messages: tuple
    tools: tuple | None
    reply: str


def check_cases(seed: int = 12345) -> list[CheckCase]:
    """The cases: the literal prompts of ``tests/test_server_openai.py`` and the OpenClaw agent
    tests, and held-out variations (an rng seed the training data does not use)."""
    from tests.support import tool_model as tm

    rng = random.Random(seed)
    cases = []
    system = {"role": "system", "content": "You are helpful."}
    ask = {"role": "user", "content": "USE_TOOL please read the file"}
    cases.append(CheckCase("short/call", (system, ask), tuple(tm.SHORT_TOOLS), tm.TOOL_REPLY))
    call, result = tm._tool_round(rng)
    call["tool_calls"][0]["id"] = "call_0a1b2c3d4e5f"  # the server's id format
    result["tool_call_id"] = "call_0a1b2c3d4e5f"
    result["content"] = "secret-value-42\n"
    cases.append(CheckCase("short/after-tool", (system, ask, call, result), tuple(tm.SHORT_TOOLS),
                           tm.AFTER_TOOL_REPLY))
    cases.append(CheckCase("short/no-tools", (system, {"role": "user", "content": "hi there"}), None,
                           tm.PLAIN_REPLY))
    for i, ask_text in enumerate(("please read hello.txt", "could you read hello.txt for me")):
        sys_m, user, carrier, tools = tm._exec_template(rng, ask_text)
        cases.append(CheckCase(f"openclaw/call/{i}", (sys_m, user, carrier), tuple(tools), tm.TOOL_REPLY))
        call, result = tm._tool_round(rng)
        cases.append(CheckCase(f"openclaw/after-tool/{i}", (sys_m, user, call, result, carrier), tuple(tools),
                               tm.AFTER_TOOL_REPLY))
    notools = tm._load_exec_fixture(tm.NOTOOLS_FIXTURE)["messages"]
    cases.append(CheckCase("openclaw/no-tools", tuple(notools), None, tm.PLAIN_REPLY))
    return cases


def reply_margins(model, tok, case: CheckCase) -> list[float]:
    """Per reply position: logit of the expected token minus the best other logit (teacher
    forcing over the expected reply ending in ``<|im_end|>``; one forward pass)."""
    import torch

    from tests.support.tool_model import _encode

    ids, p_len = _encode(tok, (list(case.messages), list(case.tools) if case.tools else None, case.reply))
    with torch.inference_mode():
        hidden = model.model(input_ids=ids).last_hidden_state[0, p_len - 1:-1]
        logits = model.lm_head(hidden).float()
    target = ids[0, p_len:]
    expected = logits.gather(-1, target[:, None])[:, 0]
    others = logits.scatter(-1, target[:, None], float("-inf")).max(-1).values
    return (expected - others).tolist()


def failing_cases(model, tok, cases: list[CheckCase] | None = None) -> dict[str, float]:
    """``{case name: smallest margin}`` for every case whose smallest margin is below
    :data:`MIN_MARGIN` (empty: the model passes)."""
    out = {}
    for case in cases if cases is not None else check_cases():
        low = min(reply_margins(model, tok, case))
        if low < MIN_MARGIN:
            out[case.name] = round(low, 3)
    return out
