"""The trainer sees what was sampled: each sample's own temperature and top-p, constrained
decoding, replies cut at the token limit, over-long samples.

At step 0 with the serving engine's own weights, the trainer's old log-probs equal the engine's
sampling log-probs for any mix of temperatures and top-p values in one batch (mean gap <= 1e-3,
every TIS weight 1 +- 1e-3); top-p log-probs are those of the renormalised nucleus on both sides.
"""

from __future__ import annotations

import asyncio
import logging
import math

import httpx
import pytest
import torch

from openclaw_rl.capture.records import TurnRecord
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.engine import SamplingParams
from openclaw_rl.engine.sampling import sample_next_token
from openclaw_rl.rollout.samples import turn_to_sample
from slime.guards.admission import AdmissionPolicy, admit, fit_context
from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.algorithms.logprobs import _chunk_logprob_entropy, nucleus_drop_mask
from slime.record.sample import LogprobSource, Sample, SampleStatus

TINY = "builtin:tiny-qwen3"
#: (temperature, top_p) mixed in one batch; 0 is greedy (reported at temperature 1, no top-p)
SETTINGS = ((1.0, 1.0), (0.7, 0.9), (0.7, 1.0), (1.3, 0.5), (0.5, 0.95), (0.0, 1.0), (1.0, 0.3))


@pytest.mark.parametrize("temperature, top_p", [(1.0, 0.9), (0.7, 0.5), (1.5, 0.2), (0.3, 0.99)])
def test_trainer_distribution_is_the_engines(temperature, top_p):
    """The engine's reported log-prob of each sampled token equals the trainer's (same logits)."""
    g = torch.Generator().manual_seed(0)
    logits_N_V = torch.randn(40, 300, generator=g) * 3
    events = [sample_next_token(row, SamplingParams(temperature=temperature, top_p=top_p),
                                torch.Generator().manual_seed(i)) for i, row in enumerate(logits_N_V)]
    targets_N = torch.tensor([e.token_id for e in events])
    n = len(events)
    logp_N, ent_N = _chunk_logprob_entropy(logits_N_V, targets_N, torch.nn.Identity(),
                                           torch.full((n,), temperature), torch.full((n,), top_p), None, True)
    torch.testing.assert_close(logp_N, torch.tensor([e.logprob for e in events]), atol=1e-5, rtol=0)
    kept = (~nucleus_drop_mask(logits_N_V / temperature, torch.full((n,), top_p))).sum(-1)
    assert (kept < 300).all() and (kept >= 1).all()  # the nucleus really cuts
    assert torch.isfinite(ent_N).all() and (ent_N <= torch.log(kept.double()).float() + 1e-4).all()


def test_the_sampled_token_is_kept_at_the_nucleus_boundary():
    """Float noise can move the boundary; the sampled token stays in (it was in the engine's)."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    drop = nucleus_drop_mask(logits, torch.tensor([0.5]))
    assert drop.tolist() == [[False, True, True, True]]
    drop = nucleus_drop_mask(logits, torch.tensor([0.5]), torch.tensor([2]))
    assert drop.tolist() == [[False, True, False, True]]


@pytest.fixture(scope="module")
def engine():
    from openclaw_rl.engine.transformers_engine import TransformersEngine

    eng = TransformersEngine(TINY)
    yield eng
    asyncio.run(eng.aclose())


def _mixed_turns(engine, per_setting=2, max_new=10) -> list[TurnRecord]:
    prompts = [[151644, 872, 198, 9707, 0, 151645, 198, 151644, 77091, 198], [151644, 872, 198, 13048, 151645, 198]]
    turns = []
    for k, (t, p) in enumerate(SETTINGS):
        for i in range(per_setting):
            ids = prompts[i % 2]
            out = asyncio.run(engine.generate(ids, SamplingParams(max_new_tokens=max_new, temperature=t, top_p=p,
                                                                  seed=10 * k + i)))
            turns.append(TurnRecord(session_id=f"s{k}", turn_type="main", messages=[], prompt_text="",
                                    prompt_ids=ids, response_ids=out.token_ids, response_logprobs=out.logprobs,
                                    response_text="", finish_reason=out.finish_reason,
                                    weight_version=out.weight_version, temperature=t, top_p=p,
                                    turn_uid=f"s{k}:{i}", turn_index=i, id=len(turns) + 1))
    return turns


def test_mixed_sampling_settings_in_one_batch_match_at_step_0(engine):
    samples = [turn_to_sample(t, 1.0, True) for t in _mixed_turns(engine)]
    for s in samples:
        s.advantages = [1.0] * s.response_length
    assert {(s.sampling_temperature, s.sampling_top_p) for s in samples} == set(SETTINGS)
    backend = TrainingBackend(parse_args(["--model-path", TINY, "--rollout-batch-size", str(len(samples)),
                                          "--micro-batch-size", "7", "--use-tis", "--tis-cap", "100",
                                          "--rollout-temperature", "1.0"]))
    old = backend.policy_logprobs(samples)
    diffs = [a - b for s, lp in zip(samples, old) for a, b in zip(lp, s.rollout_log_probs)]
    assert max(abs(d) for d in diffs) < 1e-3
    assert all(abs(math.exp(d) - 1) <= 1e-3 for d in diffs)  # every token's TIS weight
    m = backend.train_step(samples)
    assert m["train_rollout_logprob_abs_diff"] <= 1e-3 and m["train_rollout_logprob_abs_diff_max"] < 1e-3
    assert abs(m["tis_weight"] - 1) <= 1e-3 and m["tis_clipfrac"] == 0
    assert m["n_tokens_without_engine_logprobs"] == 0
    # the same batch at one global temperature (what the trainer did before): far off
    for s in samples:
        s.sampling_temperature = s.sampling_top_p = None
    wrong = TrainingBackend(parse_args(["--model-path", TINY, "--rollout-batch-size", str(len(samples))]))
    gap = [abs(a - b) for s, lp in zip(samples, wrong.policy_logprobs(samples)) for a, b in zip(lp, s.rollout_log_probs)]
    assert sum(gap) / len(gap) > 0.05


def _sample(tokens, r, status=SampleStatus.COMPLETED, source=LogprobSource.ENGINE, turn="t:0"):
    return Sample(tokens=tokens, response_length=r, rollout_log_probs=[-0.5] * r, status=status,
                  logprob_source=source, turn_id=turn, reward=1.0, advantages=[1.0] * r,
                  teacher_log_probs=[-1.0] * r)


def test_constrained_and_text_made_samples_get_the_policys_logprobs(engine):
    """Forced tokens have log-prob 0 under the constrained distribution: the trainer cannot reproduce
    it, so such samples (and ones without log-probs) train on the policy's own log-probs: TIS 1, and
    they stay out of the train/rollout gap."""
    (exact, *_), = [[turn_to_sample(t, 1.0, True) for t in _mixed_turns(engine, 1, 6)[:1]]]
    forced = _sample(exact.tokens, exact.response_length, source="constrained", turn="forced:0")
    forced.rollout_log_probs = [0.0] * forced.response_length
    text = _sample(exact.tokens, exact.response_length, source="none", turn="text:0")
    backend = TrainingBackend(parse_args(["--model-path", TINY, "--rollout-batch-size", "3", "--use-tis"]))
    kept, metrics = admit([exact, forced, text], AdmissionPolicy(), backend)
    policy = backend.policy_logprobs([exact])[0]
    for s in kept[1:]:
        torch.testing.assert_close(torch.tensor(s.rollout_log_probs), torch.tensor(policy), atol=1e-6, rtol=0)
    assert metrics["samples/constrained"] == 1 and metrics["samples/without_logprobs"] == 1
    assert metrics["samples/rollout_logprobs_recomputed"] == 2
    for s in kept:
        s.advantages = [1.0] * s.response_length
    m = backend.train_step(kept)
    assert m["n_tokens_without_engine_logprobs"] == 2 * exact.response_length
    assert m["train_rollout_logprob_abs_diff"] < 1e-3 and abs(m["tis_weight"] - 1) < 1e-3


def test_a_forced_tool_call_is_recorded_as_constrained(tiny_server):
    tools = [{"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}]
    headers = {"Authorization": f"Bearer {tiny_server.api_key}"}
    for choice, sid in (("required", "forced-1"), ("auto", "free-1")):
        r = httpx.post(tiny_server.base_url + "/chat/completions", timeout=300, headers={**headers, "X-Session-Id": sid},
                       json={"messages": [{"role": "user", "content": "go"}], "tools": tools, "tool_choice": choice,
                             "max_tokens": 40, "temperature": 0.8, "top_p": 0.9, "seed": 1})
        assert r.status_code == 200, r.text
    store = TrajectoryStore(tiny_server.buffer_dir)
    forced, = store.turns(session_id="forced-1")
    free, = store.turns(session_id="free-1")
    assert forced.constrained is True and free.constrained is False
    assert (forced.temperature, forced.top_p) == (0.8, 0.9)
    assert turn_to_sample(forced, 1.0, True).logprob_source == LogprobSource.CONSTRAINED
    sample = turn_to_sample(free, 1.0, True)
    assert sample.logprob_source == LogprobSource.ENGINE
    assert (sample.sampling_temperature, sample.sampling_top_p) == (0.8, 0.9)


def test_truncated_replies_policy_and_counts():
    cut = _sample(list(range(1, 9)), 4, status=SampleStatus.TRUNCATED)
    done = _sample(list(range(1, 9)), 4)
    kept, m = admit([cut, done], AdmissionPolicy(truncated_replies="mask"))
    assert kept[0].loss_mask == [0] * 4 and kept[0].advantages == [0.0] * 4 and kept[1].loss_mask == [1] * 4
    assert (m["samples/truncated"], m["samples/truncated_masked"]) == (1, 1)
    cut = _sample(list(range(1, 9)), 4, status=SampleStatus.TRUNCATED)
    kept, m = admit([cut], AdmissionPolicy(truncated_replies="train"))
    assert kept[0].loss_mask == [1] * 4 and (m["samples/truncated"], m["samples/truncated_masked"]) == (1, 0)


@pytest.mark.parametrize("argv, generates, want", [
    ([], False, "mask"), ([], True, "train"), (["--truncated-replies", "train"], False, "train"),
    (["--truncated-replies", "mask"], True, "mask")])
def test_truncated_replies_default_masks_judged_live_turns(argv, generates, want):
    cfg = parse_args(argv)
    assert AdmissionPolicy.from_config(cfg, 4096, generates).truncated_replies == want


def test_live_turn_cut_at_max_tokens_is_a_truncated_sample():
    turn = TurnRecord(session_id="s", turn_type="main", messages=[], prompt_text="", prompt_ids=[1, 2],
                      response_ids=[3, 4], response_logprobs=[-1.0, -1.0], response_text="", finish_reason="length",
                      weight_version=0, turn_uid="s:0", turn_index=0, id=1)
    sample = turn_to_sample(turn, 1.0, True)
    assert sample.status == SampleStatus.TRUNCATED and sample.metadata["finish_reason"] == "length"


def test_over_long_samples_are_cut_or_dropped_and_named(caplog):
    long = _sample(list(range(1, 15)), 8, turn="sess:3")     # prompt 6 + response 8 = 14 tokens
    prompt_only = _sample(list(range(1, 15)), 2, turn="sess:4")  # prompt 12: no room in 10
    fits = _sample(list(range(1, 9)), 4, turn="sess:5")
    with caplog.at_level(logging.WARNING, logger="slime.guards.admission"):
        kept, m = admit([long, prompt_only, fits], AdmissionPolicy(max_context_len=10))
    assert [s.turn_id for s in kept] == ["sess:3", "sess:5"]
    cut = kept[0]
    assert cut.tokens == list(range(1, 11)) and cut.response_length == 4 and cut.prompt_length == 6
    assert cut.loss_mask == [1] * 4 and cut.rollout_log_probs == [-0.5] * 4 and cut.teacher_log_probs == [-1.0] * 4
    assert cut.metadata["context_cut_from"] == 14
    assert (m["samples/over_context_truncated"], m["samples/over_context_dropped"]) == (1, 1)
    text = caplog.text
    assert "sess:3 has 14 tokens (prompt 6), more than --rollout-max-context-len 10: cut to 10 tokens" in text
    assert "sess:4 has 14 tokens (prompt 12), more than --rollout-max-context-len 10: dropped" in text
    kept, m = admit([_sample(list(range(1, 15)), 8)], AdmissionPolicy(max_context_len=10, context_overflow="drop"))
    assert kept == [] and m["samples/over_context_dropped"] == 1
    assert fit_context(fits, 8) is fits


def test_context_limit_defaults_to_the_models_window():
    cfg = parse_args([])
    assert AdmissionPolicy.from_config(cfg, 40960, False).max_context_len == 40960
    assert AdmissionPolicy.from_config(parse_args(["--rollout-max-context-len", "512"]), 40960,
                                       False).max_context_len == 512
