"""Continuous batching in TransformersEngine on the real ``builtin:tiny-qwen3`` model (CPU):
a request batched with others samples what it samples alone (same ids, logprobs within 1e-4 and
equal to teacher forcing), whichever requests share its forward passes, whenever it joins, however
its prompt is chunked; a row whose forward pass fails fails alone."""

from __future__ import annotations

import asyncio
import time

import pytest
import torch

from openclaw_rl.engine import EngineError, GenerationOutput, SamplingParams
from openclaw_rl.engine.sampling import draw_token
from openclaw_rl.engine.transformers_engine import TransformersEngine
from tests.support.faulty_engine import FailingStepEngine

MODEL = "builtin:tiny-qwen3"
PROMPTS = ([151644, 872, 198, 9707, 0, 151645, 198, 151644, 77091, 198], [151644, 872, 198, 13048, 151645, 198],
           list(range(1000, 1031)), [151644, 77091, 198])
#: (temperature, top_p, seed, top_logprobs) of the mixed batch; temperature 0 is greedy
MIXED = ((1.0, 1.0, 11, 0), (0.0, 1.0, None, 3), (0.7, 0.9, 12, 2), (1.3, 0.5, 13, 0), (0.5, 1.0, 14, 5),
         (1.0, 0.3, 15, 1))


def _record_rows(engine) -> list[int]:
    """Wrap the engine's forward pass (as its scheduler calls it); the returned list gets the rows
    of each pass. Undone by :func:`_unrecord`."""
    rows, real = [], engine._scheduler._forward

    def forward(batch, ids, mask):
        rows.append(len(batch.rows))
        return real(batch, ids, mask)

    engine._scheduler._forward = forward
    return rows


def _unrecord(engine) -> None:
    engine._scheduler._forward = engine._forward


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread: on a shared CPU two threads wait on each other (several times slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def engine():
    eng = TransformersEngine(MODEL)
    yield eng
    asyncio.run(eng.aclose())


def _params(k: int, n: int = 12) -> SamplingParams:
    t, p, seed, top = MIXED[k % len(MIXED)]
    return SamplingParams(max_new_tokens=n, temperature=t, top_p=p, seed=seed, top_logprobs=top)


def _solo(engine, k: int, n: int = 12) -> GenerationOutput:
    return asyncio.run(engine.generate(PROMPTS[k % len(PROMPTS)], _params(k, n)))


def _assert_same(a: GenerationOutput, b: GenerationOutput) -> None:
    assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason
    assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
    for ta, tb in zip(a.top_logprobs, b.top_logprobs):
        assert [i for i, _ in ta] == [i for i, _ in tb]


def test_mixed_batch_equals_each_request_alone(engine):
    solo = [_solo(engine, k, 8) for k in range(len(MIXED))]
    rows = _record_rows(engine)
    try:
        async def together():
            return await asyncio.gather(*(engine.generate(PROMPTS[k % len(PROMPTS)], _params(k, 8))
                                          for k in range(len(MIXED))))
        batched = asyncio.run(together())
    finally:
        _unrecord(engine)
    assert max(rows) == len(MIXED)  # they really shared forward passes
    for a, b in zip(solo, batched):
        _assert_same(a, b)


def test_batched_logprobs_equal_teacher_forcing(engine):
    async def together():
        return await asyncio.gather(*(engine.generate(PROMPTS[k], SamplingParams(max_new_tokens=16, temperature=0.8,
                                                                                  seed=k)) for k in range(4)))
    model = engine.current_model()
    for k, out in enumerate(asyncio.run(together())):
        ids = torch.tensor([PROMPTS[k] + out.token_ids])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0].float()
        ref = torch.log_softmax(logits[len(PROMPTS[k]) - 1:-1] / 0.8, -1)
        expected = [float(ref[i, tok]) for i, tok in enumerate(out.token_ids)]
        assert max(abs(a - b) for a, b in zip(expected, out.logprobs)) < 1e-4


def test_requests_joining_a_running_batch_sample_what_they_would_alone(engine):
    """Late joiners are prefilled, then merged into the running batch (caches of different widths)."""
    solo = [_solo(engine, k, 24) for k in range(4)]
    rows = _record_rows(engine)
    try:
        async def staggered():
            first = GenerationOutput(prompt_ids=PROMPTS[0])
            stream = engine.generate_stream(PROMPTS[0], _params(0, 24), first)
            late = []
            async for _ in stream:
                if len(first.token_ids) in (3, 9) and len(late) < 3:  # join mid-decode, at two points
                    late += [asyncio.ensure_future(engine.generate(PROMPTS[k], _params(k, 24)))
                             for k in ((1, 2) if not late else (3,))]
            return [first] + list(await asyncio.gather(*late))
        got = asyncio.run(staggered())
    finally:
        _unrecord(engine)
    assert max(rows) >= 3
    for a, b in zip(solo, got):
        _assert_same(a, b)


def test_chunked_prefill_and_unbatched_mode_sample_the_same(engine):
    solo = [_solo(engine, k, 10) for k in range(4)]
    for kwargs in ({"max_batch_size": 3, "prefill_chunk_tokens": 7}, {"max_batch_size": 1}):
        other = TransformersEngine(MODEL, **kwargs)
        rows = _record_rows(other)
        try:
            async def together():
                return await asyncio.gather(*(other.generate(PROMPTS[k], _params(k, 10)) for k in range(4)))
            got = asyncio.run(together())
        finally:
            asyncio.run(other.aclose())
        assert max(rows) == kwargs["max_batch_size"], kwargs
        for a, b in zip(solo, got):
            _assert_same(a, b)


def test_a_row_failing_in_a_batch_fails_alone():
    eng = FailingStepEngine(MODEL, fault_seed=12, fault_step=4, where="model")
    try:
        solo = {k: asyncio.run(eng.generate(PROMPTS[k % 4], _params(k, 10))) for k in (0, 1, 3)}

        async def together():
            return await asyncio.gather(*(eng.generate(PROMPTS[k % 4], _params(k, 10)) for k in range(4)),
                                        return_exceptions=True)
        got = asyncio.run(together())
        assert isinstance(got[2], EngineError) and "injected fault" in str(got[2])
        assert max(eng.fault_batch_rows) == 4 and eng.faults == 1  # it failed in the batch, then alone
        for k in (0, 1, 3):
            _assert_same(solo[k], got[k])
        deadline = time.time() + 30  # the worker drops finished rows at the end of its iteration
        while eng.batch_stats() != {"waiting": 0, "running": 0, "batches": 0}:
            assert time.time() < deadline, eng.batch_stats()
            time.sleep(0.01)
        after = asyncio.run(eng.generate(PROMPTS[0], _params(0, 10)))  # the engine keeps serving
        _assert_same(solo[0], after)
    finally:
        asyncio.run(eng.aclose())


def test_the_token_draw_samples_the_distribution_exactly():
    """Two-level Gumbel-max against the categorical distribution: a chi-square goodness-of-fit
    test (fixed seeds; p-value well above 1e-3), ids and whole blocks of probability 0 never drawn."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(1500, generator=torch.Generator().manual_seed(1)) * 2  # 3 blocks, the last partial
    logits[7] = logits[600:1024] = float("-inf")  # one id and a whole block without mass
    logprobs = torch.log_softmax(logits, -1)
    n = 10000
    counts = torch.bincount(torch.tensor([draw_token(logprobs, g) for _ in range(n)]), minlength=1500).double()
    probs = logprobs.double().exp()
    assert counts[probs == 0].sum() == 0
    big = probs * n >= 5  # chi-square cells: each id expected 5+ times, the rest pooled
    observed = torch.cat([counts[big], (n - counts[big].sum())[None]])
    expected = torch.cat([probs[big] * n, (n - (probs[big] * n).sum())[None]])
    stat = ((observed - expected) ** 2 / expected).sum()
    p_value = float(torch.special.gammaincc(torch.tensor((len(observed) - 1) / 2, dtype=torch.float64), stat / 2))
    assert p_value > 1e-3, (float(stat), len(observed) - 1)


def test_the_token_draw_ignores_float_rounding_on_a_flat_150k_distribution():
    """Logprobs perturbed as a batched forward pass perturbs them (a few 1e-6) leave the draw alone
    (inverse-CDF sampling, whose every boundary moves, flips about 2 of these 1000 draws)."""
    logprobs = torch.log_softmax(torch.randn(151936, generator=torch.Generator().manual_seed(2)) * 0.1, -1)
    noisy = torch.log_softmax(logprobs + 5e-6 * torch.randn(151936, generator=torch.Generator().manual_seed(3)), -1)
    same = sum(draw_token(logprobs, torch.Generator().manual_seed(s)) == draw_token(noisy, torch.Generator().manual_seed(s))
               for s in range(1000))
    assert same >= 999
