"""The trained tool model used by the tool-call and OpenClaw agent tests is checked at build time
(:mod:`tests.support.tool_model_check`) and cached under its recipe key."""

from __future__ import annotations

import re

import torch

from openclaw_rl.models import load_model, load_tokenizer
from tests.support.tool_model import recipe_key
from tests.support.tool_model_check import MIN_MARGIN, check_cases, failing_cases, reply_margins


def test_the_cached_tool_model_passes_its_check(tool_model):
    model = load_model(tool_model)
    tok = load_tokenizer(tool_model)
    assert failing_cases(model, tok) == {}
    assert tool_model.name == f"tiny-qwen3-tools-{recipe_key()}"


def test_the_check_fails_an_untrained_model_and_names_every_case():
    model, tok = load_model("builtin:tiny-qwen3"), load_tokenizer("builtin:tiny-qwen3")
    failing = failing_cases(model, tok)
    assert set(failing) == {c.name for c in check_cases()}
    assert all(m < MIN_MARGIN for m in failing.values())


def test_margins_are_the_teacher_forced_logit_gaps():
    model, tok = load_model("builtin:tiny-qwen3"), load_tokenizer("builtin:tiny-qwen3")
    case = check_cases()[2]  # short prompt, no tools: "Hello!"
    margins = reply_margins(model, tok, case)
    from tests.support.tool_model import _encode
    ids, p_len = _encode(tok, (list(case.messages), None, case.reply))
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0, p_len - 1:-1]
    for t, m in enumerate(margins):
        target = int(ids[0, p_len + t])
        other = torch.cat([logits[t, :target], logits[t, target + 1:]]).max()
        assert abs(float(logits[t, target] - other) - m) < 1e-4


def test_the_recipe_key_is_stable_and_short():
    assert re.fullmatch(r"[0-9a-f]{12}", recipe_key()) and recipe_key() == recipe_key()
