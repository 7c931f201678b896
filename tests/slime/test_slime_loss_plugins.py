"""Loss plugins in the three conventions (simple, slime, typed): loading, detection, what each
receives, normalisation, and failures that stop the step without touching the weights."""

from __future__ import annotations

import os
import textwrap

import pytest
import torch

from slime.config.arguments import parse_args
from slime.trainer.backend import TrainingBackend
from slime.guards.loss import LossPluginError
from slime.plugins.loss import LossPlugin, detect_loss_convention, load_loss_plugin, probe_loss_plugin
from slime.algorithms.losses import LossInputs, PolicyLossConfig
from slime.plugins.check import check_plugins
from slime.plugins.loader import REPO_ROOT, PluginError
from slime.record.sample import Sample

SIMPLE_EXAMPLE = "examples/method-template/custom_loss.py"
SLIME_EXAMPLE = "examples/plugins/slime_loss.py"


def _cfg(*extra: str, gbs: int = 4, mbs: int = 4, lr: float = 1e-2):
    return parse_args(["--rollout-batch-size", str(gbs), "--global-batch-size", str(gbs),
                       "--micro-batch-size", str(mbs), "--lr", str(lr), *extra])


def _plugin(tmp_path, body: str, name: str = "plugin.py") -> str:
    path = tmp_path / name
    path.write_text("import torch\n" + textwrap.dedent(body))
    return str(path)


def _samples(resp_lens=(4, 2, 6, 3), prompt_lens=(3, 5, 4, 6), seed=0, vocab=512, mask_one=False):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i, (p, r) in enumerate(zip(prompt_lens, resp_lens)):
        adv = 1.0 if i % 2 == 0 else -1.0
        mask = [1] * r
        if mask_one and r > 2:
            mask[1] = 0
        out.append(Sample(tokens=torch.randint(0, vocab, (p + r,), generator=g).tolist(), response_length=r,
                          rollout_log_probs=[-1.0] * r, loss_mask=mask,
                          advantages=[adv * m for m in mask], reward=adv))
    return out


def _weights(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _step(make_tiny_model, loss_fn, samples, *extra, mbs=4):
    backend = TrainingBackend(_cfg(*extra, mbs=mbs), model=make_tiny_model(), loss_fn=loss_fn)
    metrics = backend.train_step(samples)
    return backend, metrics


# ------------------------------------------------------------------------------- loading
def test_each_convention_is_detected_by_names_and_by_count(tmp_path):
    spec = _plugin(tmp_path, """
        def compute_loss(policy_logits, reference_logits, rewards, advantages, config):
            return policy_logits.sum()
        def slime_style(args, batch, logits, sum_of_sample_mean):
            return logits.sum(), {}
        def typed(inputs, config):
            return inputs.logprobs_B_T.sum()
        def five(a, b, c, d, e):
            return a.sum()
        def four(a, b, c, d):
            return c.sum(), {}
        def three(a, b, c):
            return a
    """)
    assert load_loss_plugin(spec).convention == "simple"  # default name compute_loss
    assert load_loss_plugin(spec + ":slime_style").convention == "slime"
    assert load_loss_plugin(spec + ":typed").convention == "typed"
    assert load_loss_plugin(spec + ":five").convention == "simple"
    assert load_loss_plugin(spec + ":four").convention == "slime"
    assert load_loss_plugin("slime.algorithms.losses.policy_loss").convention == "typed"
    with pytest.raises(PluginError) as err:
        load_loss_plugin(spec + ":three")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("--custom-loss-function-path") and "expected" in msg
    assert "compute_loss(policy_logits, reference_logits, rewards, advantages, config)" in msg
    assert detect_loss_convention(load_loss_plugin(SLIME_EXAMPLE).fn) == "slime"


def test_load_errors_are_one_line_naming_the_flag(tmp_path):
    bad_import = _plugin(tmp_path, "raise RuntimeError('boom')\n", "bad_import.py")
    annotated = _plugin(tmp_path, """
        def compute_loss(policy_logits, reference_logits, rewards, advantages, config) -> float:
            return 0.0
    """, "annotated.py")
    cases = {
        str(tmp_path / "missing.py"): "not found",
        _plugin(tmp_path, "x = 1\n", "nofn.py"): "no function 'compute_loss' or 'loss_function'",
        bad_import: "failed to import: RuntimeError: boom",
        annotated: "annotated to return float; expected a scalar torch.Tensor",
        "no_such_pkg.mod.fn": "cannot import module no_such_pkg.mod",
    }
    for spec, expected in cases.items():
        with pytest.raises(PluginError) as err:
            load_loss_plugin(spec)
        assert "\n" not in str(err.value) and "--custom-loss-function-path" in str(err.value), str(err.value)
        assert expected in str(err.value)


def test_files_resolve_from_the_working_directory_and_the_repository_root(tmp_path):
    here = os.getcwd()
    (tmp_path / "mine").mkdir()
    local = _plugin(tmp_path / "mine", """
        def my_loss(policy_logits, reference_logits, rewards, advantages, config):
            return policy_logits.sum()
    """)
    os.chdir(tmp_path)
    try:
        assert load_loss_plugin("mine/plugin.py:my_loss").fn.__name__ == "my_loss"  # working directory
        plugin = load_loss_plugin(SIMPLE_EXAMPLE)  # repository root, run from elsewhere
        assert plugin.fn.__code__.co_filename == str(REPO_ROOT / SIMPLE_EXAMPLE)
        assert plugin.plugin_name == f"plugin {SIMPLE_EXAMPLE}:compute_loss (simple convention)"
    finally:
        os.chdir(here)
    assert local


# ------------------------------------------------------------------------------- what plugins get
def test_simple_convention_gets_response_aligned_masked_tensors(make_tiny_model, tmp_path):
    spec = _plugin(tmp_path, """
        SEEN = []
        def compute_loss(policy_logits, reference_logits, rewards, advantages, config):
            SEEN.append((policy_logits.detach().clone(), reference_logits.clone(), rewards.clone(),
                         advantages.clone(), dict(config), policy_logits.requires_grad))
            return -(policy_logits * advantages).sum() / config["loss_mask"].sum()
    """)
    plugin = load_loss_plugin(spec)
    samples = _samples(mask_one=True)
    backend, metrics = _step(make_tiny_model, plugin, samples)
    pol, ref, rewards, adv, config, grad = plugin.fn.__globals__["SEEN"][0]
    assert pol.shape == ref.shape == adv.shape == (4, 6) and rewards.tolist() == [1.0, -1.0, 1.0, -1.0]
    assert grad and config["clip_range"] == 0.2 and config["kl_coeff"] == 0.0 and config["num_samples"] == 4
    assert config["response_lengths"] == [4, 2, 6, 3] and config["global_num_samples"] == 4
    mask = config["loss_mask"]
    assert mask[0].tolist() == [1, 0, 1, 1, 0, 0] and mask[1].tolist() == [1, 1, 0, 0, 0, 0]
    assert (pol[mask == 0] == 0).all() and (ref[mask == 0] == 0).all() and (adv[mask == 0] == 0).all()
    assert (pol[mask == 1] < 0).all()  # log-probs of the sampled tokens
    torch.testing.assert_close(pol, ref)  # old policy == current weights before the step
    assert metrics["skipped"] == 0.0 and metrics["weight_version"] == 1.0 and "plugin_loss" in metrics


def test_simple_example_is_the_documented_formula():
    plugin = load_loss_plugin(SIMPLE_EXAMPLE)
    B, T = 2, 5
    resp = torch.zeros(B, T, dtype=torch.bool)
    resp[0, 2:5], resp[1, 3:5] = True, True
    new = (-torch.rand(B, T, dtype=torch.float64) * resp).requires_grad_(True)
    old = (new.detach() - 0.3 * torch.rand(B, T, dtype=torch.float64)) * resp
    adv = torch.tensor([[2.0], [-1.0]], dtype=torch.float64).expand(B, T) * resp
    inputs = LossInputs(new, old, adv.contiguous(), resp.double(), float(resp.sum()), response_mask_B_T=resp,
                        rewards_B=torch.tensor([1.0, -1.0], dtype=torch.float64), global_num_samples=2.0)
    out = plugin(inputs, PolicyLossConfig(eps_clip=0.1, kl_loss_coef=0.05))
    pol = torch.stack([torch.cat([new[0, 2:5]]), torch.nn.functional.pad(new[1, 3:5], (0, 1))])
    ref = torch.stack([old[0, 2:5], torch.nn.functional.pad(old[1, 3:5], (0, 1))])
    a = torch.stack([adv[0, 2:5], torch.nn.functional.pad(adv[1, 3:5], (0, 1))])
    ratio = torch.exp(pol - ref)
    expected = -torch.min(ratio * a, ratio.clamp(0.9, 1.1) * a).mean() + 0.05 * (pol - ref).mean()
    torch.testing.assert_close(out.loss, expected)
    out.loss.backward()
    assert new.grad is not None and new.grad[0, 2:].abs().sum() > 0 and new.grad[0, :2].abs().sum() == 0


def test_slime_convention_gets_slime_batch_and_flat_logprobs(make_tiny_model, tmp_path):
    spec = _plugin(tmp_path, """
        SEEN = []
        def loss(args, batch, logits, sum_of_sample_mean):
            SEEN.append((args, batch, logits, sum_of_sample_mean(torch.ones_like(logits))))
            return sum_of_sample_mean(-logits * torch.cat(batch["advantages"])), {"n": len(batch["rewards"])}
    """)
    plugin = load_loss_plugin(spec + ":loss", _cfg())
    samples = _samples(mask_one=True)
    _, metrics = _step(make_tiny_model, plugin, samples)
    args, batch, logits, ones = plugin.fn.__globals__["SEEN"][0]
    assert args.eps_clip == 0.2 and batch["response_lengths"] == [4, 2, 6, 3]
    assert batch["total_lengths"] == [len(s.tokens) for s in samples]
    assert [t.tolist() for t in batch["unconcat_tokens"]] == [s.tokens for s in samples]
    assert [m.tolist() for m in batch["loss_masks"]] == [s.loss_mask for s in samples]
    assert [r.tolist() for r in batch["rollout_log_probs"]] == [s.rollout_log_probs for s in samples]
    assert batch["rewards"] == [1.0, -1.0, 1.0, -1.0] and batch["ref_log_probs"] is None
    assert logits.shape == (15,) and logits.requires_grad
    torch.testing.assert_close(logits.detach(), torch.cat(batch["log_probs"]))  # old == current before the step
    assert float(ones) == pytest.approx(4.0)  # sum of per-sample means of 1
    assert metrics["n"] == pytest.approx(1.0)  # 4 / 4 samples


def test_slime_example_equals_builtin_loss_on_equal_lengths(make_tiny_model):
    """Per-sample means equal the token mean when every sample has as many loss tokens."""
    samples = _samples(resp_lens=(3, 3, 3, 3))
    ref, _ = _step(make_tiny_model, None, [Sample.from_dict(s.to_dict()) for s in samples])
    plugin, _ = _step(make_tiny_model, load_loss_plugin(SLIME_EXAMPLE, _cfg()), samples)
    for k, v in _weights(ref.model).items():
        torch.testing.assert_close(_weights(plugin.model)[k], v)


def test_slime_loss_does_not_depend_on_the_micro_batch_split(make_tiny_model):
    samples = _samples()
    one, _ = _step(make_tiny_model, load_loss_plugin(SLIME_EXAMPLE, _cfg()),
                   [Sample.from_dict(s.to_dict()) for s in samples], mbs=4)
    many, _ = _step(make_tiny_model, load_loss_plugin(SLIME_EXAMPLE, _cfg()), samples, mbs=1)
    for k, v in _weights(one.model).items():
        torch.testing.assert_close(_weights(many.model)[k], v)


# ------------------------------------------------------------------------------- failures
@pytest.mark.parametrize("body, expected", [
    ("return policy_logits.sum() * float('nan')", "non-finite loss (nan)"),
    ("return policy_logits.sum().detach()", "no gradient"),
    ("return 1.0", "returned float; expected a scalar torch.Tensor"),
    ("return policy_logits", "returned a tensor of shape (4, 6); expected a scalar torch.Tensor"),
    ("raise KeyError('clip')", "raised KeyError"),
])
def test_bad_simple_loss_stops_the_step_and_keeps_the_weights(make_tiny_model, tmp_path, body, expected):
    spec = _plugin(tmp_path, f"""
        def compute_loss(policy_logits, reference_logits, rewards, advantages, config):
            {body}
    """)
    backend = TrainingBackend(_cfg(), model=make_tiny_model(), loss_fn=load_loss_plugin(spec))
    before = _weights(backend.model)
    with pytest.raises(LossPluginError) as err:
        backend.train_step(_samples())
    assert f"plugin {spec}:compute_loss (simple convention)" in str(err.value) and expected in str(err.value)
    assert "weights unchanged" in str(err.value) and "\n" not in str(err.value)
    assert backend.weight_version == 0 and backend.step == 0
    for k, v in _weights(backend.model).items():
        torch.testing.assert_close(v, before[k])
    assert all(p.grad is None for p in backend.trainable_parameters)


def test_bad_slime_loss_return_is_named(make_tiny_model, tmp_path):
    spec = _plugin(tmp_path, """
        def loss(args, batch, logits, sum_of_sample_mean):
            return sum_of_sample_mean(logits)
    """)
    backend = TrainingBackend(_cfg(), model=make_tiny_model(), loss_fn=load_loss_plugin(spec + ":loss"))
    with pytest.raises(LossPluginError, match=r"returned Tensor; expected a \(loss, metrics\) tuple"):
        backend.train_step(_samples())
    assert backend.weight_version == 0


def test_start_up_check_probes_the_return_type(tmp_path):
    good = _plugin(tmp_path, """
        def compute_loss(policy_logits, reference_logits, rewards, advantages, config):
            return (policy_logits * advantages).mean()
    """, "good.py")
    assert check_plugins(parse_args(["--custom-loss-function-path", good]))[0].startswith("loss: plugin")
    assert check_plugins(parse_args(["--custom-loss-function-path", SLIME_EXAMPLE]))
    for i, (body, expected) in enumerate([
            ("return {'loss': policy_logits.sum()}", "returned dict; expected a scalar torch.Tensor"),
            ("return policy_logits.detach().sum()", "no gradient")]):
        bad = _plugin(tmp_path, f"""
            def compute_loss(policy_logits, reference_logits, rewards, advantages, config):
                {body}
        """, f"bad{i}.py")
        with pytest.raises(PluginError) as err:
            check_plugins(parse_args(["--custom-loss-function-path", bad + ":compute_loss"]))
        assert expected in str(err.value) and "probe batch, before training" in str(err.value)
        assert str(err.value).startswith("--custom-loss-function-path") and "\n" not in str(err.value)


def test_probe_passes_the_kl_reference_when_the_kl_loss_is_on(tmp_path):
    """The probe batch carries reference log-probs exactly when the KL loss is on: a plugin that
    needs them passes the probe with ``use_kl_loss`` and fails it (naming why) without."""
    spec = _plugin(tmp_path, """
        def loss(inputs, config):
            if inputs.ref_logprobs_B_T is None:
                raise ValueError("no reference log-probs")
            assert inputs.ref_logprobs_B_T.shape == inputs.logprobs_B_T.shape
            kl = (inputs.logprobs_B_T - inputs.ref_logprobs_B_T) * inputs.loss_mask_B_T
            return kl.sum() / inputs.loss_mask_B_T.sum()
    """) + ":loss"
    plugin = load_loss_plugin(spec)
    assert plugin.convention == "typed"
    probe_loss_plugin(plugin, PolicyLossConfig(use_kl_loss=True, kl_loss_coef=0.1))  # passes
    with pytest.raises(PluginError, match="no reference log-probs"):
        probe_loss_plugin(plugin, PolicyLossConfig(use_kl_loss=False))
    assert isinstance(load_loss_plugin(SIMPLE_EXAMPLE), LossPlugin)


def test_example_compute_loss_trains_tiny_qwen3():
    cfg = _cfg("--model-path", "builtin:tiny-qwen3", "--custom-loss-function-path", SIMPLE_EXAMPLE, mbs=2, lr=1e-3)
    backend = TrainingBackend(cfg, loss_fn=load_loss_plugin(cfg.custom_loss_function_path, cfg))
    before = _weights(backend.model)
    metrics = backend.train_step(_samples(vocab=151000))
    assert metrics["skipped"] == 0.0 and metrics["weight_version"] == 1.0
    assert any(not torch.equal(before[k], v) for k, v in _weights(backend.model).items())
