"""Tests for slime.trainer.backend.TrainingBackend: one optimizer step per global batch, LoRA, KL, plugins,
checkpoints and weight export into the serving engine."""

from __future__ import annotations

import asyncio
import math

import pytest
import torch

from openclaw_rl.models import resolve_model_path
from slime.config.arguments import parse_args
from slime.trainer.backend import DEFAULT_LORA_TARGET_MODULES, LossPluginError, TrainingBackend
from slime.algorithms.logprobs import token_logprobs_from_logits
from slime.algorithms.losses import LossOutputs, policy_loss
from slime.record.sample import Sample

TINY_QWEN3 = "builtin:tiny-qwen3"


def _cfg(*extra: str, gbs: int = 4, mbs: int = 1, lr: float = 1e-3):
    return parse_args(["--rollout-batch-size", str(gbs), "--global-batch-size", str(gbs),
                       "--micro-batch-size", str(mbs), "--lr", str(lr), *extra])


def _samples(n=4, seed=0, vocab=512, advantage=None, prompt_lens=(3, 5, 4, 6), resp_lens=(4, 2, 6, 3)):
    """``n`` samples of varying prompt/response lengths with random advantages (or a fixed one)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        p, r = prompt_lens[i % len(prompt_lens)], resp_lens[i % len(resp_lens)]
        tokens = torch.randint(0, vocab, (p + r,), generator=g).tolist()
        if advantage is None:
            adv = (torch.randn(1, generator=g).item(),) * r
        else:
            adv = (advantage,) * r
        out.append(Sample(tokens=tokens, response_length=r, rollout_log_probs=[0.0] * r, advantages=list(adv),
                          weight_version=0))
    return out


def _with_rollout_logprobs(model, samples):
    """Fill ``rollout_log_probs`` from a plain full-logits forward of ``model`` (one sample at a time)."""
    filled = []
    for s in samples:
        ids = torch.tensor([s.tokens])
        with torch.no_grad():
            lp = token_logprobs_from_logits(model(input_ids=ids).logits, ids)[0]
        d = s.to_dict()
        d["rollout_log_probs"] = lp[s.prompt_length:].tolist()
        filled.append(Sample.from_dict(d))
    return filled


def _weights(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _assert_same(a, b, **tol):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], **tol, msg=lambda m, k=k: f"{k}: {m}")


def _response_logprob(model, sample):
    ids = torch.tensor([sample.tokens])
    with torch.no_grad():
        lp = token_logprobs_from_logits(model(input_ids=ids).logits, ids)[0]
    return float(lp[sample.prompt_length:].sum())


# ---------------------------------------------------------------------------------------- basics
def test_step_changes_weights_and_increments_version(tiny_model):
    backend = TrainingBackend(_cfg(), model=tiny_model)
    before = _weights(backend.model)
    samples = _samples()
    for s in samples:
        s.weight_version = 0
    m = backend.train_step(samples)
    assert backend.weight_version == 1 and backend.step == 1 and m["weight_version"] == 1
    assert m["skipped"] == 0
    assert m["n_samples"] == 4 and m["n_trained_samples"] == 4
    assert m["n_tokens"] == sum(s.num_loss_tokens for s in samples)
    assert m["n_seq_tokens"] == sum(len(s.tokens) for s in samples)
    for key in ("loss", "pg_loss", "pg_clipfrac", "approx_kl", "kl_loss", "entropy", "grad_norm",
                "train_rollout_logprob_abs_diff", "staleness_mean", "tokens_per_s"):
        assert key in m and math.isfinite(m[key]), key
    assert m["grad_norm"] > 0 and m["entropy"] > 0 and m["tokens_per_s"] > 0
    assert m["pg_clipfrac"] == 0 and abs(m["approx_kl"]) < 1e-12  # ratio is 1 on the single step
    after = _weights(backend.model)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    # staleness is measured against the backend's version when the batch arrives
    m2 = backend.train_step(samples)
    assert m2["staleness_mean"] == 1 and m2["staleness_max"] == 1 and backend.weight_version == 2


def test_missing_advantages_raise(tiny_model):
    backend = TrainingBackend(_cfg(), model=tiny_model)
    s = _samples(1)[0]
    s.advantages = None
    with pytest.raises(ValueError, match="advantages"):
        backend.train_step([s])
    assert backend.weight_version == 0


def test_custom_loss_type_needs_loss_fn(tiny_model):
    cfg = _cfg("--loss-type", "custom_loss", "--custom-loss-function-path", "pkg.mod.fn")
    with pytest.raises(ValueError, match="loss_fn"):
        TrainingBackend(cfg, model=tiny_model)


def test_entirely_masked_batch_is_skipped(tiny_model):
    backend = TrainingBackend(_cfg(), model=tiny_model)
    before = _weights(backend.model)
    samples = _samples()
    for s in samples:
        s.loss_mask = [0] * s.response_length
    empty = Sample(tokens=[1, 2, 3], response_length=0, rollout_log_probs=[], advantages=[])
    m = backend.train_step(samples + [empty])
    assert m["skipped"] == 1 and m["n_samples"] == 5 and m["n_tokens"] == 0
    assert backend.weight_version == 0 and backend.step == 0
    assert not backend.optimizer.state
    _assert_same(before, _weights(backend.model), atol=0, rtol=0)


def test_masked_samples_contribute_nothing(make_tiny_model):
    samples = _samples()
    masked = _samples(2, seed=9)
    for s in masked:
        s.loss_mask = [0] * s.response_length
    a = TrainingBackend(_cfg(mbs=2), model=make_tiny_model())
    b = TrainingBackend(_cfg(mbs=2, gbs=6), model=make_tiny_model())
    ma = a.train_step(samples)
    mb = b.train_step([masked[0]] + samples[:2] + [masked[1]] + samples[2:])
    assert mb["n_trained_samples"] == 4 and mb["n_samples"] == 6
    assert ma["loss"] == pytest.approx(mb["loss"], rel=1e-9, abs=1e-12)
    _assert_same(_weights(a.model), _weights(b.model), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------- numerics
def test_logprob_mismatch_is_zero_with_identical_weights(make_tiny_model):
    model = make_tiny_model(dtype=torch.float32)
    samples = _with_rollout_logprobs(model, _samples())
    backend = TrainingBackend(_cfg(mbs=2), model=model)
    m = backend.train_step(samples)
    assert m["train_rollout_logprob_abs_diff"] < 1e-3
    assert m["train_rollout_logprob_abs_diff_max"] < 1e-3


def test_micro_batch_size_does_not_change_the_update(make_tiny_model):
    samples = _samples(4)
    results = []
    for mbs in (1, 4, 2):
        backend = TrainingBackend(_cfg(mbs=mbs), model=make_tiny_model(dtype=torch.float64))
        metrics = backend.train_step(samples)
        results.append((_weights(backend.model), metrics))
    (w1, m1), (w4, m4), (w2, m2) = results
    _assert_same(w1, w4, rtol=1e-6, atol=1e-10)
    _assert_same(w1, w2, rtol=1e-6, atol=1e-10)
    for key in ("loss", "pg_loss", "grad_norm", "entropy", "n_tokens"):
        assert m1[key] == pytest.approx(m4[key], rel=1e-9, abs=1e-12), key


def test_recompute_and_reuse_old_logprobs_agree(make_tiny_model):
    samples = _samples(4)
    a = TrainingBackend(_cfg(mbs=2), model=make_tiny_model())
    b = TrainingBackend(_cfg(mbs=2), model=make_tiny_model(), recompute_old_logprobs=False)
    ma, mb = a.train_step(samples), b.train_step(samples)
    assert ma["entropy"] == pytest.approx(mb["entropy"], rel=1e-9)
    _assert_same(_weights(a.model), _weights(b.model), rtol=1e-9, atol=1e-12)


def test_learning_raises_logprob_of_rewarded_response(tiny_model):
    backend = TrainingBackend(_cfg("--clip-grad", "0", gbs=1, lr=1e-2), model=tiny_model)
    sample = _samples(1, advantage=1.0)[0]
    history = [_response_logprob(backend.model, sample)]
    for _ in range(5):
        backend.train_step([sample])
        history.append(_response_logprob(backend.model, sample))
    assert history[-1] > history[0] + 1.0, history
    assert all(b > a for a, b in zip(history, history[1:])), history


def test_grad_clipping_bounds_the_update(make_tiny_model):
    samples = _samples(4)
    m = TrainingBackend(_cfg("--clip-grad", "1e-6"), model=make_tiny_model()).train_step(samples)
    assert m["grad_norm"] > 1e-6  # reported before clipping


def test_tis_and_kl_and_entropy_terms(make_tiny_model):
    model = make_tiny_model()
    samples = _with_rollout_logprobs(model, _samples(4))
    cfg = _cfg("--use-tis", "--use-kl-loss", "--kl-loss-coef", "0.1", "--kl-loss-type", "low_var_kl",
               "--entropy-coef", "0.01", mbs=2, lr=1e-2)
    backend = TrainingBackend(cfg, model=model)
    assert backend.ref_model is not None and not any(p.requires_grad for p in backend.ref_model.parameters())
    m1 = backend.train_step(samples)
    assert m1["tis_weight"] == pytest.approx(1.0, abs=1e-9)  # identical weights: weights are 1
    assert abs(m1["kl_loss"]) < 1e-12 and m1["entropy"] > 0
    m2 = backend.train_step(samples)
    assert m2["kl_loss"] > 0  # the policy moved away from the frozen reference
    assert m2["train_rollout_logprob_abs_diff"] > 0


# ---------------------------------------------------------------------------------------- LoRA
def _lora_cfg(*extra, lr=1e-2, gbs=4, mbs=2):
    return _cfg("--use-lora", "--lora-rank", "4", *extra, gbs=gbs, mbs=mbs, lr=lr)


def test_lora_step_only_changes_adapter_weights(tiny_model):
    backend = TrainingBackend(_lora_cfg(), model=tiny_model)
    names = {n.split(".")[-2] for n, _ in backend.model.named_modules() if n.endswith(".lora_A")}
    assert names == set(DEFAULT_LORA_TARGET_MODULES), names
    before = _weights(backend.model)
    backend.train_step(_samples())
    after = _weights(backend.model)
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and all("lora_" in k for k in changed), changed
    assert any("lora_B" in k for k in changed)
    assert all("lora_" in n for n, p in backend.model.named_parameters() if p.requires_grad)


def test_lora_kl_reference_is_the_base_model(tiny_model):
    backend = TrainingBackend(_lora_cfg("--use-kl-loss", "--kl-loss-coef", "0.5", "--kl-loss-type", "k3"),
                              model=tiny_model)
    assert backend.ref_model is None  # no copy: the adapter is disabled for the reference
    samples = _samples()
    m1 = backend.train_step(samples)
    assert abs(m1["kl_loss"]) < 1e-12  # lora_B starts at zero: policy == base
    m2 = backend.train_step(samples)
    assert m2["kl_loss"] > 0


# ---------------------------------------------------------------------------------------- plugin hook
def test_loss_plugin_hook_is_used(make_tiny_model):
    calls = []

    def doubled(inputs, config):
        calls.append(inputs.global_num_tokens)
        out = policy_loss(inputs, config)
        return LossOutputs(loss=out.loss * 2, num_tokens=out.num_tokens, sums=out.sums, counts=out.counts)

    samples = _samples()
    m = TrainingBackend(_cfg(mbs=2), model=make_tiny_model(), loss_fn=doubled).train_step(samples)
    ref = TrainingBackend(_cfg(mbs=2), model=make_tiny_model()).train_step(samples)
    assert calls == [float(sum(s.num_loss_tokens for s in samples))] * 2  # global count per micro-batch
    assert m["loss"] == pytest.approx(2 * ref["loss"], rel=1e-9)


@pytest.mark.parametrize("kind", ["nan", "inf", "no_grad", "raises", "wrong_type"])
def test_bad_loss_plugin_raises_and_keeps_weights(tiny_model, kind):
    def nan_loss(inputs, config):
        out = policy_loss(inputs, config)
        if kind == "nan":
            out.loss = out.loss * float("nan")
        elif kind == "inf":
            out.loss = out.loss + float("inf")
        elif kind == "no_grad":
            out.loss = torch.tensor(0.5)
        elif kind == "raises":
            raise RuntimeError("boom")
        else:
            return {"loss": out.loss}
        return out

    backend = TrainingBackend(_cfg(mbs=2), model=tiny_model, loss_fn=nan_loss)
    before = _weights(backend.model)
    with pytest.raises(LossPluginError, match="nan_loss") as info:
        backend.train_step(_samples())
    assert "nan_loss" in info.value.function
    assert backend.weight_version == 0 and backend.step == 0
    assert not backend.optimizer.state
    assert all(p.grad is None for p in backend.model.parameters())
    _assert_same(before, _weights(backend.model), atol=0, rtol=0)


# ---------------------------------------------------------------------------------------- checkpoints
def test_save_load_round_trip_restores_weights_and_optimizer(make_tiny_model, tmp_path):
    batch1, batch2 = _samples(seed=1), _samples(seed=2)
    a = TrainingBackend(_cfg(mbs=2, lr=1e-2), model=make_tiny_model())
    a.train_step(batch1)
    ckpt = a.save(tmp_path, data_cursor=17)
    saved = _weights(a.model)
    assert ckpt.name == "checkpoint-1" and (ckpt / "optimizer.pt").is_file()
    a.train_step(batch2)
    continued = _weights(a.model)

    b = TrainingBackend(_cfg(mbs=2, lr=1e-2), model=make_tiny_model(seed=5))  # different init
    state = b.load(tmp_path)
    assert state.data_cursor == 17 and state.step == 1
    assert b.weight_version == 1 and b.step == 1
    _assert_same(saved, _weights(b.model), atol=0, rtol=0)
    b.train_step(batch2)  # same Adam moments -> same second step
    _assert_same(continued, _weights(b.model), rtol=1e-12, atol=1e-14)
    assert b.weight_version == 2


def test_lora_save_load_round_trip(make_tiny_model, tmp_path):
    a = TrainingBackend(_lora_cfg(), model=make_tiny_model())
    a.train_step(_samples(seed=1))
    ckpt = a.save(tmp_path / "run", step=7)
    assert (ckpt / "adapter_model.safetensors").is_file() and not (ckpt / "model.safetensors").exists()
    a.train_step(_samples(seed=2))
    continued = _weights(a.model)
    b = TrainingBackend(_lora_cfg(), model=make_tiny_model())
    assert b.load(ckpt).step == 7 and b.weight_version == 1
    b.train_step(_samples(seed=2))
    _assert_same(continued, _weights(b.model), rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------- real model + engine
@pytest.fixture(scope="module")
def engine():
    from openclaw_rl.engine.transformers_engine import TransformersEngine

    eng = TransformersEngine(TINY_QWEN3)
    yield eng
    asyncio.run(eng.aclose())


def _generate(engine, prompt, **kw):
    from openclaw_rl.engine import SamplingParams

    return asyncio.run(engine.generate(prompt, SamplingParams(**kw)))


def test_engine_rollout_logprobs_match_trainer_at_step_0(engine):
    """Samples sampled by the serving engine (KV cache, token by token) vs the trainer's recompute."""
    prompts = [[151644, 872, 198, 9707, 0, 151645, 198, 151644, 77091, 198], [151644, 872, 198, 13048]]
    samples = []
    for i, prompt in enumerate(prompts * 2):
        out = _generate(engine, prompt, max_new_tokens=12, temperature=1.0, seed=i)
        samples.append(Sample(tokens=prompt + out.token_ids, response_length=len(out.token_ids),
                              rollout_log_probs=out.logprobs, advantages=[1.0] * len(out.token_ids),
                              weight_version=out.weight_version))
    backend = TrainingBackend(_cfg("--model-path", TINY_QWEN3, mbs=2))
    assert backend.tokenizer is not None
    m = backend.train_step(samples)
    assert m["train_rollout_logprob_abs_diff"] < 1e-3, m
    assert m["staleness_max"] == 0


def test_exported_lora_adapter_changes_engine_greedy_output(engine, tmp_path):
    prompt = [151644, 872, 198, 9707, 0, 151645, 198, 151644, 77091, 198]
    base_out = _generate(engine, prompt, max_new_tokens=6, temperature=0)
    target = [9707, 1879, 0, 9707, 1879, 0]
    assert base_out.token_ids != target
    # four deliberately large updates (the collapse guard would undo them: it is not what this tests)
    backend = TrainingBackend(_cfg("--model-path", TINY_QWEN3, "--use-lora", "--lora-rank", "8",
                                   "--collapse-guard", "off", gbs=1, lr=5e-2))
    sample = Sample(tokens=prompt + target, response_length=len(target), rollout_log_probs=[0.0] * len(target),
                    advantages=[1.0] * len(target))
    for _ in range(4):
        backend.train_step([sample])
    path = backend.export_weights(tmp_path / "export")
    files = {p.name for p in path.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= files and "model.safetensors" not in files

    served = engine.load_weights(str(path), version=backend.weight_version)
    try:
        assert served == 4 and engine.weight_version == 4
        new_out = _generate(engine, prompt, max_new_tokens=6, temperature=0)
        assert new_out.weight_version == 4
        assert new_out.token_ids != base_out.token_ids
        # the engine's merged adapter and the trainer agree on the trained response
        model = engine.current_model()
        trainer_lp = _response_logprob(backend.model, sample)
        assert _response_logprob(model, sample) == pytest.approx(trainer_lp, abs=1e-3)
    finally:  # serve the base weights again for any later test
        engine.load_weights(str(resolve_model_path(TINY_QWEN3)), version=engine.weight_version + 1)


def test_export_full_model_folder_round_trips(tmp_path):
    from openclaw_rl.models import load_model

    backend = TrainingBackend(_cfg("--model-path", TINY_QWEN3, gbs=1, lr=1e-2))
    prompt = [151644, 872, 198, 9707]
    backend.train_step([Sample(tokens=prompt + [11, 12], response_length=2, rollout_log_probs=[0.0, 0.0],
                               advantages=[1.0, 1.0])])
    path = backend.export_weights(tmp_path / "full")
    assert (path / "config.json").is_file() and (path / "tokenizer.json").is_file()
    reloaded = load_model(path)
    _assert_same(_weights(backend.model), _weights(reloaded), atol=0, rtol=0)
    # a second export replaces the first in place
    backend.export_weights(tmp_path / "full")
    assert not any(p.name.startswith(".tmp-") for p in tmp_path.iterdir())


def test_exports_and_checkpoints_serialise_the_tokenizer_once(tmp_path, monkeypatch):
    """Each export and checkpoint carries the tokenizer's files, byte for byte what its own
    ``save_pretrained`` writes, but the vocabulary is serialised once per backend (~0.22 CPU-s a
    time for the Qwen tokenizer), not once per published version."""
    backend = TrainingBackend(_cfg("--model-path", TINY_QWEN3, gbs=1))
    tokenizer_class = type(backend.tokenizer)
    calls = []
    original = tokenizer_class.save_pretrained

    def counted(self, *args, **kwargs):
        calls.append(args[0] if args else kwargs.get("save_directory"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(tokenizer_class, "save_pretrained", counted)
    folders = [backend.export_weights(tmp_path / f"export-{i}") for i in range(3)]
    folders.append(backend.save(tmp_path / "ckpt", step=1))
    assert len(calls) == 1
    direct = tmp_path / "direct"
    original(backend.tokenizer, str(direct))
    names = sorted(p.name for p in direct.iterdir())
    assert "tokenizer.json" in names
    for folder in folders:
        for name in names:
            assert (folder / name).read_bytes() == (direct / name).read_bytes(), (folder, name)


def test_gradient_checkpointing_and_cpu_offload_do_not_change_the_update(make_tiny_model):
    samples = _samples(4)
    plain = TrainingBackend(_cfg(mbs=2), model=make_tiny_model())
    other = TrainingBackend(_cfg("--offload-optimizer-state", mbs=2), model=make_tiny_model(),
                            gradient_checkpointing=True)
    assert not other.offload_active  # on CPU the optimizer state already lives in host memory
    for _ in range(2):
        plain.train_step(samples)
        other.train_step(samples)
    _assert_same(_weights(plain.model), _weights(other.model), rtol=1e-9, atol=1e-12)
