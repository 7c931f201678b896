"""The model-based PRM modes (prototype, channel, hybrid) on real models, and how a run builds
its judges from flags. Only what is deterministic is asserted: votes parse, probabilities sum to
1, the same input gives the same output, cached scoring equals a plain forward pass; never
which verdict a tiny or 135M model happens to prefer."""

from __future__ import annotations

import asyncio
import math

import pytest

from openclaw_rl.judges.channel import STATEMENTS, ChannelJudgeBackend
from openclaw_rl.judges.lexical import HybridBackend, LexicalBackend
from openclaw_rl.judges.modes import PRM_MODES, make_local_backend, resolve_hint_mode, resolve_prm_mode
from openclaw_rl.judges.prompts import JudgeInput
from openclaw_rl.judges.prototype import PrototypeJudgeBackend
from slime.methods.registry import load_method_class
from slime.config.run_args import parse_run_args

TINY = "builtin:tiny-qwen3"
INPUTS = [JudgeInput("2+2 is 5.", "No, that's wrong.", "user", None, "What is 2+2?"),
          JudgeInput("", "[tool call_1] Meeting at 3pm.", "tool",
                     [{"function": {"name": "read", "arguments": '{"path": "a"}'}}], "Read a"),
          JudgeInput("Paris.", "How tall is Mount Fuji?", "user")]


@pytest.fixture(scope="module")
def tiny_proto():
    return PrototypeJudgeBackend(TINY)


def _check(backend, inp, n=3, zero_allowed=True):
    a = asyncio.run(backend.score_input(inp, n))
    b = asyncio.run(backend.score_input(inp, n))
    assert a == b and len(a.votes) == n and set(a.votes) <= {1, -1, 0}
    assert set(a.probs) == {1, -1, 0} and math.isclose(sum(a.probs.values()), 1.0, abs_tol=1e-9)
    assert all(0.0 <= p <= 1.0 for p in a.probs.values())
    if backend.vote == "argmax":
        assert a.votes == [max((1, -1, 0), key=lambda v: a.probs[v])] * n
    if not zero_allowed:
        assert a.probs[0] == 0.0 and 0 not in a.votes
    return a


@pytest.mark.parametrize("inp", INPUTS)
def test_prototype_mode_on_the_tiny_model(tiny_proto, inp):
    _check(tiny_proto, inp)
    emb = tiny_proto.embed(inp.next_state, inp.next_state_role)
    assert emb.dim() == 1 and math.isclose(float(emb.norm()), 1.0, rel_tol=1e-5)
    # the reply is not read: a different reply gives the same probabilities
    other = JudgeInput("something else", inp.next_state, inp.next_state_role, None, "another request")
    assert asyncio.run(tiny_proto.score_input(other, 1)).probs == asyncio.run(tiny_proto.score_input(inp, 1)).probs


def test_prototype_needs_an_anchor_per_verdict(tiny_proto):
    with pytest.raises(ValueError, match="per verdict"):
        PrototypeJudgeBackend(model=tiny_proto.model, tokenizer=tiny_proto.tokenizer,
                              anchors=(("user", "thanks", 1), ("user", "wrong", -1)))


def test_channel_mode_on_the_tiny_model_matches_a_plain_forward_pass(tiny_proto):
    import torch

    ch = ChannelJudgeBackend(model=tiny_proto.model, tokenizer=tiny_proto.tokenizer)
    for inp in INPUTS:
        _check(ch, inp, zero_allowed=False)
    lp = ch.state_logprobs("No, that's wrong.", "user")
    prefix = ch._prompt_ids(STATEMENTS["user"][-1])
    cont = ch._prompt_ids(" No, that's wrong.")
    with torch.inference_mode():
        logits = ch.model(input_ids=torch.tensor([prefix + cont])).logits[0]
    ref = torch.log_softmax(logits[len(prefix) - 1:-1].float(), -1).gather(-1, torch.tensor(cont)[:, None]).sum()
    assert math.isclose(lp[-1], float(ref), rel_tol=1e-4, abs_tol=1e-4)
    sampled = ChannelJudgeBackend(model=ch.model, tokenizer=ch.tokenizer, vote="sample", seed=3)
    a, b = (asyncio.run(sampled.score_input(INPUTS[0], 9)) for _ in range(2))
    assert a.votes == b.votes and set(a.votes) <= {1, -1}


def test_hybrid_mode_on_the_tiny_model(tiny_proto):
    hybrid = make_local_backend("hybrid", TINY, model=tiny_proto.model, tokenizer=tiny_proto.tokenizer)
    assert isinstance(hybrid, HybridBackend) and hybrid.model is tiny_proto.model
    cue = asyncio.run(hybrid.score_input(INPUTS[0], 2))
    assert cue.votes == [-1, -1] and cue.probs == {1: 0.0, -1: 1.0, 0: 0.0}
    no_cue = asyncio.run(hybrid.score_input(INPUTS[2], 2))
    assert no_cue.probs == asyncio.run(tiny_proto.score_input(INPUTS[2], 2)).probs
    with pytest.raises(ValueError, match="JudgeInput"):
        asyncio.run(hybrid.score([{"role": "user", "content": "x"}], 1))


@pytest.mark.parametrize("cls", [PrototypeJudgeBackend, ChannelJudgeBackend])
def test_next_state_modes_on_the_embedded_model(cls):
    backend = cls("builtin:smollm2-135m")
    for inp in INPUTS:
        _check(backend, inp, zero_allowed=cls is PrototypeJudgeBackend)


def test_modes_resolve():
    assert resolve_prm_mode(None) == resolve_prm_mode("auto", "builtin:smollm2-135m") == "classifier"
    assert resolve_prm_mode("auto", "/models/qwen3-7b") == "logprob"  # a model folder follows the judge prompt
    assert resolve_prm_mode("channel", "/models/qwen3-7b") == "channel"
    assert resolve_hint_mode("auto") == resolve_hint_mode(None, None, "builtin:smollm2-135m") == "extractive"
    assert resolve_hint_mode(None, "http://judge/v1") == resolve_hint_mode("auto", None, "/models/q") == "model"
    assert resolve_hint_mode("extractive", "http://judge/v1") == "extractive"
    with pytest.raises(ValueError, match="--prm-mode"):
        resolve_prm_mode("psychic")
    with pytest.raises(ValueError, match="--hint-mode"):
        resolve_hint_mode("psychic")
    assert isinstance(make_local_backend("lexical"), LexicalBackend)


def _cfg(*extra):
    return parse_run_args(["--model-path", TINY, *extra])


def build_turn_judge(cfg):
    """The run's judge as the rollout service builds it: from the run's method."""
    from openclaw_rl.rollout.service import build_turn_judge as build

    return build(cfg, load_method_class(cfg.advantage_estimator)(cfg))


def test_run_builds_judges_from_flags(monkeypatch):
    from openclaw_rl.judges.backends import LocalJudgeBackend
    from openclaw_rl.judges.classifier import ClassifierBackend
    from openclaw_rl.judges.hint_backend import StructuredHintBackend
    from openclaw_rl.judges.hint_extract import ExtractiveHintBackend
    from openclaw_rl.models import resolve_model_path

    monkeypatch.delenv("PRM_MODEL_PATH", raising=False)
    monkeypatch.delenv("PRM_MODE", raising=False)
    monkeypatch.delenv("JUDGE_MODEL_PATH", raising=False)
    rl = build_turn_judge(_cfg())  # defaults: the best measured modes, no judge model loaded
    assert isinstance(rl.prm.backend, ClassifierBackend)
    folder = str(resolve_model_path(TINY))  # a model folder, as a user's checkpoint would be
    named = build_turn_judge(_cfg("--prm-model-path", folder))
    assert type(named.prm.backend) is LocalJudgeBackend and named.prm.backend.mode == "logprob"
    assert isinstance(build_turn_judge(_cfg("--prm-model-path", TINY)).prm.backend, ClassifierBackend)
    assert isinstance(build_turn_judge(_cfg("--prm-mode", "lexical")).prm.backend, LexicalBackend)  # kept by name
    combine = build_turn_judge(_cfg("--advantage-estimator", "combine"))
    assert isinstance(combine.prm.backend, ClassifierBackend)
    assert isinstance(combine.hint_judge.backend, ExtractiveHintBackend)
    model = build_turn_judge(_cfg("--advantage-estimator", "combine", "--prm-mode", "prototype", "--hint-mode", "model"))
    assert isinstance(model.prm.backend, PrototypeJudgeBackend)
    assert isinstance(model.hint_judge.backend, StructuredHintBackend)
    assert model.hint_judge.backend.model is model.prm.backend.model  # one copy of the judge weights
    assert isinstance(build_turn_judge(_cfg("--advantage-estimator", "opd", "--judge-model-path", folder))
                      .hint_judge.backend, StructuredHintBackend)
    assert isinstance(build_turn_judge(_cfg("--advantage-estimator", "opd")).hint_judge.backend, ExtractiveHintBackend)


def test_bad_prm_mode_from_env_is_a_one_line_error(monkeypatch, capsys):
    from slime.train import main

    monkeypatch.setenv("PRM_MODE", "psychic")
    assert main(["--model-path", TINY, "--num-rollout", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"PRM_MODE must be one of {', '.join(PRM_MODES)}, got 'psychic'" in err
    assert len(err.splitlines()) == 1
