"""The ``probe`` PRM mode: registration, a deterministic build, tool verdicts, user next states.

The probe on ``builtin:smollm2-135m`` is built once into the model cache (``python -m
tests.support.build_models`` does it before ``make test``; a first build here takes minutes on a
loaded 2-core machine). The user cases are clear ones, far from the decision boundary.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import torch

from openclaw_rl.judges.cases import (HELDOUT_V8_PATH, HELDOUT_V9_PATH, HELDOUT_V10_PATH, HELDOUT_V11_PATH,
                                      HELDOUT_V12_PATH, HELDOUT_V13_PATH, HELDOUT_V14_PATH, MEASURED_SETS,
                                      load_cases)
from openclaw_rl.judges.classifier import training_examples
from openclaw_rl.judges.modes import PRM_MODES, make_local_backend, resolve_prm_mode
from openclaw_rl.judges.probe import RECIPE, HiddenStateEncoder, mix_probs, probe_examples, train_probe
from openclaw_rl.judges.prompts import VERDICTS, JudgeInput


def _call(name, **args):
    return {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _verdict(backend, inp: JudgeInput) -> int:
    res = asyncio.run(backend.score_input(inp, 3))
    assert len(set(res.votes)) == 1 and abs(sum(res.probs.values()) - 1) < 1e-6
    return res.votes[0]


@pytest.fixture(scope="module")
def judge():
    return make_local_backend("probe", "builtin:smollm2-135m")


def test_probe_is_a_mode_and_auto_is_unchanged():
    assert "probe" in PRM_MODES and resolve_prm_mode("probe") == "probe"
    assert resolve_prm_mode("auto", "builtin:smollm2-135m") == "classifier"


def test_training_is_deterministic_and_mixing_normalises():
    gen = torch.Generator().manual_seed(0)
    x_N_F = torch.randn(60, 8, generator=gen)
    labels = [VERDICTS[i % 3] for i in range(60)]
    one, two = train_probe(x_N_F, labels, dict(RECIPE, steps=20)), train_probe(x_N_F, labels, dict(RECIPE, steps=20))
    assert torch.equal(one.weight_F_C, two.weight_F_C) and torch.equal(one.bias_C, two.bias_C)
    p = mix_probs({1: 0.7, -1: 0.2, 0: 0.1}, {1: 0.1, -1: 0.8, 0: 0.1}, 0.5)
    assert abs(sum(p.values()) - 1) < 1e-9 and p[0] < min(p[1], p[-1])
    with pytest.raises(ValueError):
        train_probe(x_N_F[:3], [1, 1, -1])


@pytest.mark.parametrize("held_out_path", [HELDOUT_V8_PATH, HELDOUT_V9_PATH, HELDOUT_V10_PATH, HELDOUT_V11_PATH,
                                            HELDOUT_V12_PATH, HELDOUT_V13_PATH, HELDOUT_V14_PATH],
                         ids=["v8", "v9", "v10", "v11", "v12", "v13", "v14"])
def test_training_data_never_reads_the_held_out_sets(held_out_path):
    """heldout_v8 to v14 are blind sets no judge trains on; v6 and v7, measured before, are trained on."""
    probe_rows, classifier_rows = probe_examples(), training_examples()
    assert {r[3] for r in probe_rows} == set(VERDICTS) and len(probe_rows) > 1500
    held_out = {(c.next_state, c.request) for c in load_cases(held_out_path) if c.role == "user"}
    assert len(held_out) >= 120
    # a few short replies ("?", "brb", "👍") are in the corpus too, with other requests; no turn is
    for rows in (probe_rows, classifier_rows):
        assert not held_out & {(r[0], r[1]) for r in rows}
    for path in MEASURED_SETS:
        measured = {(c.next_state, c.request) for c in load_cases(path) if c.role == "user"}
        assert measured <= {(r[0], r[1]) for r in probe_rows} and measured <= {(r[0], r[1]) for r in classifier_rows}


def test_encoder_pools_only_the_next_state(judge):
    enc: HiddenStateEncoder = judge.encoder
    ids, start = enc.token_ids("Thanks!", "Q", "A")
    assert 0 < start < len(ids) and enc.layers == (16, 20)
    a_N_F = enc.encode([("Thanks!", "Q", "A"), ("No, wrong.", "Q", "A")], batch=2)
    b_N_F = enc.encode([("Thanks!", "Q", "A")])
    assert a_N_F.shape == (2, enc.dim) and torch.allclose(a_N_F[0], b_N_F[0], atol=1e-4)


def test_tool_rules_decide_tool_turns(judge):
    call = _call("read_file", path="notes.txt")
    history = [{"role": "user", "content": "What's in notes.txt?"},
               {"role": "assistant", "content": "", "tool_calls": [call]}, {"role": "tool", "content": "Buy milk."}]
    repeated = JudgeInput("", "Buy milk.", "tool", [call], "What's in notes.txt?", history)
    assert _verdict(judge, repeated) == -1
    write = _call("write_file", path="report.md", content="hello")
    history = [{"role": "user", "content": "My draft is in report.md."}, {"role": "assistant", "content": "Noted."}]
    overwrite = JudgeInput("", "Wrote 5 bytes to report.md", "tool", [write], "Write hello to a new file.", history)
    assert _verdict(judge, overwrite) == -1
    ok = JudgeInput("", "total 2\n-rw-r--r-- 1 me me 12 a.txt", "tool", [_call("exec", command="ls -l")], "List files.")
    assert _verdict(judge, ok) == 1


@pytest.mark.parametrize("reply", ["Nein, das ist falsch. Ich wollte die Antwort auf Englisch, nicht auf Französisch.",
                                   "No, eso está mal. Te pedí la versión corta."])
def test_non_english_correction_is_minus_one(judge, reply):
    assert _verdict(judge, JudgeInput("Here is the answer in French: ...", reply, "user", None,
                                      "Translate this into English.")) == -1


def test_acceptance_is_plus_one(judge):
    assert _verdict(judge, JudgeInput("def rev(s): return s[::-1]", "Thanks, that worked perfectly!", "user", None,
                                      "Write a function that reverses a string.")) == 1
