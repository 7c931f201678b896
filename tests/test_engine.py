"""TransformersEngine on the real ``builtin:tiny-qwen3`` model (CPU)."""

from __future__ import annotations

import asyncio
import math

import pytest
import torch

from openclaw_rl.engine import EngineError, GenerationOutput, PromptTooLongError, SamplingParams
from openclaw_rl.engine.transformers_engine import TransformersEngine
from openclaw_rl.models import load_tokenizer

MODEL = "builtin:tiny-qwen3"


@pytest.fixture(scope="module")
def engine():
    eng = TransformersEngine(MODEL)
    yield eng
    asyncio.run(eng.aclose())


@pytest.fixture(scope="module")
def prompt():
    tok = load_tokenizer(MODEL)
    text = tok.apply_chat_template([{"role": "user", "content": "Hello there, how are you? 🙂"}],
                                   add_generation_prompt=True, tokenize=False)
    return tok(text, add_special_tokens=False)["input_ids"]


def gen(engine, ids, **kw) -> GenerationOutput:
    return asyncio.run(engine.generate(ids, SamplingParams(**kw)))


def teacher_forced_logits(model, prompt_ids, response_ids) -> torch.Tensor:
    """Raw next-token logits at each response position, shape [len(response), V]."""
    ids = torch.tensor([list(prompt_ids) + list(response_ids)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    p = len(prompt_ids)
    return logits[p - 1:p - 1 + len(response_ids)]


def perturbed_state_dict(model, scale=0.5, seed=0) -> dict:
    """Noisy copy of the weights; tied tensors (embeddings / lm_head) stay tied."""
    g = torch.Generator().manual_seed(seed)
    by_storage: dict[int, torch.Tensor] = {}
    out = {}
    for k, v in model.state_dict().items():
        if v.data_ptr() not in by_storage:
            by_storage[v.data_ptr()] = (v + scale * torch.randn(v.shape, generator=g, dtype=v.dtype)
                                        if v.is_floating_point() else v.clone())
        out[k] = by_storage[v.data_ptr()]
    return out


def test_same_seed_same_ids(engine, prompt):
    a = gen(engine, prompt, max_new_tokens=8, temperature=1.0, seed=7)
    b = gen(engine, prompt, max_new_tokens=8, temperature=1.0, seed=7)
    c = gen(engine, prompt, max_new_tokens=8, temperature=1.0, seed=8)
    assert len(a.token_ids) == 8 and a.finish_reason == "length"
    assert a.token_ids == b.token_ids and a.logprobs == b.logprobs
    assert a.token_ids != c.token_ids
    assert a.prompt_ids == prompt and a.weight_version == engine.weight_version == 0
    assert len(a.logprobs) == len(a.top_logprobs) == 8 and a.top_logprobs[0] == []


def test_greedy_is_deterministic_argmax(engine, prompt):
    a = gen(engine, prompt, max_new_tokens=10, temperature=0.0)
    b = gen(engine, prompt, max_new_tokens=10, temperature=0.0, seed=123)
    assert a.token_ids == b.token_ids
    logits = teacher_forced_logits(engine.current_model(), prompt, a.token_ids)
    assert a.token_ids == [int(i) for i in logits.argmax(-1)]
    # greedy reports the raw (temperature 1) log-softmax
    ref = torch.log_softmax(logits, -1)
    for i, tok in enumerate(a.token_ids):
        assert abs(a.logprobs[i] - float(ref[i, tok])) < 1e-4


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_equal_teacher_forcing(engine, prompt, temperature):
    out = gen(engine, prompt, max_new_tokens=16, temperature=temperature, seed=5)
    logits = teacher_forced_logits(engine.current_model(), prompt, out.token_ids)
    ref = torch.log_softmax(logits / temperature, -1)
    expected = [float(ref[i, tok]) for i, tok in enumerate(out.token_ids)]
    assert max(abs(a - b) for a, b in zip(expected, out.logprobs)) < 1e-4


def test_top_p_filtering_and_top_logprobs(engine, prompt):
    top_p = 0.3
    out = gen(engine, prompt, max_new_tokens=12, temperature=1.0, top_p=top_p, seed=9, top_logprobs=5)
    logits = teacher_forced_logits(engine.current_model(), prompt, out.token_ids)
    raw = torch.log_softmax(logits, -1)
    for i, tok in enumerate(out.token_ids):
        probs = raw[i].exp()
        sorted_p, order = torch.sort(probs, descending=True)
        before = torch.cumsum(sorted_p, 0) - sorted_p
        kept = order[before < top_p]  # smallest prefix reaching top_p
        mass = float(probs[kept].sum())
        assert mass >= top_p - 1e-6
        assert tok in set(kept.tolist()), "sampled a token outside the nucleus"
        # renormalised: logprob = log p - log(kept mass), so it is at least log p and
        # at most log p - log(top_p)
        assert abs(out.logprobs[i] - (float(raw[i, tok]) - math.log(mass))) < 1e-4
        assert float(raw[i, tok]) - 1e-5 <= out.logprobs[i] <= float(raw[i, tok]) - math.log(top_p) + 1e-5
        top = out.top_logprobs[i]
        assert len(top) == 5
        values = [lp for _, lp in top]
        assert values == sorted(values, reverse=True)
        assert top[0][0] == int(order[0]) and abs(top[0][1] - (float(raw[i, order[0]]) - math.log(mass))) < 1e-4
        assert out.logprobs[i] <= values[0] + 1e-6


def test_prompt_too_long_and_empty(engine):
    with pytest.raises(PromptTooLongError) as err:
        gen(engine, [11] * engine.max_context, max_new_tokens=4)
    assert err.value.prompt_tokens == engine.max_context and isinstance(err.value, ValueError)
    assert str(engine.max_context) in str(err.value)
    with pytest.raises(EngineError):
        gen(engine, [], max_new_tokens=4)


def test_generation_clipped_to_context():
    small = TransformersEngine(MODEL, max_context=12)
    try:
        with pytest.raises(PromptTooLongError):
            gen(small, list(range(100, 112)), max_new_tokens=4)
        out = gen(small, list(range(100, 111)), max_new_tokens=50, temperature=1.0, seed=1)
        assert len(out.token_ids) == 1  # 11 + 1 fills the context
        out = gen(small, list(range(100, 108)), max_new_tokens=50, temperature=1.0, seed=1)
        assert len(out.token_ids) == 4 and out.finish_reason == "length"
    finally:
        asyncio.run(small.aclose())


def test_stop_token_ids_end_generation(engine, prompt):
    ref = gen(engine, prompt, max_new_tokens=10, temperature=0.0)
    stop = ref.token_ids[3]
    first = ref.token_ids.index(stop)
    out = gen(engine, prompt, max_new_tokens=10, temperature=0.0, stop_token_ids=(stop,))
    assert out.token_ids == ref.token_ids[:first + 1] and out.finish_reason == "stop"


def test_concurrent_requests_interleave(engine, prompt):
    n_tokens = 12

    async def main():
        order: list[tuple[int, int]] = []  # (request, token position) in arrival order

        async def one(k):
            res = GenerationOutput(prompt_ids=prompt)
            async for _ in engine.generate_stream(prompt, SamplingParams(max_new_tokens=n_tokens, seed=100 + k), res):
                order.append((k, len(res.token_ids) - 1))
            return res

        results = await asyncio.gather(*(one(k) for k in range(4)))
        return order, results

    order, results = asyncio.run(main())
    first_at = [order.index((k, 0)) for k in range(4)]
    last_at = [order.index((k, n_tokens - 1)) for k in range(4)]
    assert max(first_at) < min(last_at), order
    for k, res in enumerate(results):
        assert len(res.token_ids) == n_tokens and res.finish_reason == "length"
        # interleaving does not change what a request samples
        solo = gen(engine, prompt, max_new_tokens=n_tokens, seed=100 + k)
        assert solo.token_ids == res.token_ids
        assert max(abs(a - b) for a, b in zip(solo.logprobs, res.logprobs)) < 1e-4


def test_abort_when_consumer_stops(engine, prompt):
    async def main():
        res = GenerationOutput(prompt_ids=prompt)
        stream = engine.generate_stream(prompt, SamplingParams(max_new_tokens=200, seed=3), res)
        async for _ in stream:
            if len(res.token_ids) >= 2:
                break
        await stream.aclose()
        return res

    res = asyncio.run(main())
    assert res.finish_reason == "abort" and len(res.token_ids) < 200
    # the engine keeps serving
    assert len(gen(engine, prompt, max_new_tokens=3, seed=1).token_ids) == 3


# ---------------------------------------------------------------------------------- weight updates
@pytest.fixture(scope="module")
def swap_engine():
    eng = TransformersEngine(MODEL)
    yield eng
    asyncio.run(eng.aclose())


def test_load_weights_changes_output_and_swaps_mid_flight(swap_engine, prompt):
    eng = swap_engine
    n_long = 300
    old_greedy = gen(eng, prompt, max_new_tokens=n_long, temperature=0.0)
    assert old_greedy.weight_version == 0 and len(old_greedy.token_ids) == n_long
    new_sd = perturbed_state_dict(eng.current_model())

    async def main():
        long_res = GenerationOutput(prompt_ids=prompt)
        stream = eng.generate_stream(prompt, SamplingParams(max_new_tokens=n_long, temperature=0.0), long_res)
        async for _ in stream:
            if len(long_res.token_ids) >= 3:
                version = await asyncio.to_thread(eng.load_weights, new_sd)
                n_at_swap = len(long_res.token_ids)
                assert version == eng.weight_version == 1
                after = await eng.generate(prompt, SamplingParams(max_new_tokens=40, temperature=0.0))
                break
        async for _ in stream:  # finish the old request
            pass
        return n_at_swap, long_res, after

    n_at_swap, long_res, after = asyncio.run(main())
    assert 3 <= n_at_swap < n_long  # the swap happened while the old request was generating
    # the in-flight request finished entirely on the old weights
    assert long_res.weight_version == 0 and long_res.finish_reason == "length"
    assert long_res.token_ids == old_greedy.token_ids
    assert max(abs(a - b) for a, b in zip(long_res.logprobs, old_greedy.logprobs)) < 1e-4
    # the new request ran on the new weights: different greedy output, version 1
    assert after.weight_version == 1
    assert after.token_ids != old_greedy.token_ids[:40]
    logits = teacher_forced_logits(eng.current_model(), prompt, after.token_ids)
    assert after.token_ids == [int(i) for i in logits.argmax(-1)]
    # the new weights are exactly the state_dict we loaded
    served = eng.current_model().state_dict()
    assert all(torch.equal(served[k], v) for k, v in new_sd.items())


def test_load_weights_versions_and_bad_state_dicts(swap_engine, prompt):
    eng = swap_engine
    start = eng.weight_version
    sd = {k: v.clone() for k, v in eng.current_model().state_dict().items()}
    assert eng.load_weights(sd, version=start + 5) == start + 5
    assert eng.load_weights(sd, version=start + 5) == start + 5  # same version: allowed
    with pytest.raises(ValueError, match="older"):
        eng.load_weights(sd, version=start + 4)
    assert eng.weight_version == start + 5
    assert eng.load_weights(sd) == start + 6
    before = gen(eng, prompt, max_new_tokens=6, temperature=0.0).token_ids
    key = next(iter(sd))
    missing = {k: v for k, v in sd.items() if k != key}
    wrong_shape = dict(sd, **{key: torch.zeros(3, 3)})
    extra = dict(sd, **{"not.a.parameter": torch.zeros(1)})
    for bad in (missing, wrong_shape, extra):
        with pytest.raises(ValueError, match="state_dict"):
            eng.load_weights(bad)
    with pytest.raises(ValueError):
        eng.load_weights("/nonexistent/folder")
    assert eng.weight_version == start + 6
    out = gen(eng, prompt, max_new_tokens=6, temperature=0.0)
    assert out.token_ids == before and out.weight_version == start + 6
