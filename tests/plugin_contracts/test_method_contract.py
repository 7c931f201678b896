"""Method contract (:class:`slime.methods.Method`): every registered method and the template's
``method.py`` set valid advantages on real samples (the tiny model's tokenizer, OPD and Combine's
teacher scored by a real training backend); a misaligned method fails."""

from __future__ import annotations

import pytest

from openclaw_rl.models import load_tokenizer
from openclaw_rl.opd.hint_prompt import teacher_prompt_ids
from slime.trainer.backend import TrainingBackend
from slime.methods import load_method_class, method_names
from slime.record.sample import Sample
from tests.plugin_contracts.contracts import assert_method_contract, contract_path

TEMPLATE = "examples/method-template/method.py:MyMethod"


@pytest.fixture(scope="module")
def samples_for():
    tok = load_tokenizer("builtin:tiny-qwen3")

    def make(hints: bool) -> list[Sample]:
        out = []
        for i, (reward, branch) in enumerate([(1.0, "both"), (-1.0, "rl"), (1.0, "opd"), (-1.0, "both")]):
            msgs = [{"role": "user", "content": f"Name a fruit ({i})."}]
            prompt = tok(tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False),
                         add_special_tokens=False)["input_ids"]
            resp = tok(f"- apple {i}", add_special_tokens=False)["input_ids"]
            s = Sample(tokens=prompt + resp, response_length=len(resp), rollout_log_probs=[-1.0] * len(resp),
                       reward=reward, source_id=i)
            if hints:
                hint = "Answer in a plain sentence." if branch != "rl" else None
                s.metadata["judgement"] = {"branch": branch, "hint": hint,
                                           "teacher_prompt_ids": teacher_prompt_ids(tok, msgs, None, hint, prompt)
                                           if hint else None}
            out.append(s)
        return out

    return make


def _cfg(run_cfg, spec):
    return run_cfg("--advantage-estimator", spec, "--n-samples-per-prompt", "2", "--rollout-batch-size", "2")


@pytest.mark.parametrize("name", sorted(set(method_names()) | {TEMPLATE}))
def test_methods_meet_the_contract(name, run_cfg, samples_for):
    cfg = _cfg(run_cfg, name)
    cls = load_method_class(name)
    samples = samples_for(hints=name in ("opd", "combine"))
    if name == "passthrough":  # the rollout set the advantages
        for s in samples:
            s.advantages = [float(s.reward)] * s.response_length
    backend = TrainingBackend(cfg) if cls.prepares_samples() else None
    metrics = assert_method_contract(cls, cfg, samples, backend)
    if name in ("opd", "combine"):
        assert all(s.teacher_log_probs is not None for s in samples if s.metadata["judgement"]["hint"])
        assert metrics.get("opd/n", metrics.get("combine/n_both")) >= 1


def test_a_user_method_meets_the_contract(run_cfg, samples_for):
    spec = contract_path("method", TEMPLATE)
    cls = load_method_class(spec)
    cfg = _cfg(run_cfg, spec)
    assert_method_contract(cls, cfg, samples_for(hints=False), TrainingBackend(cfg) if cls.prepares_samples() else None)


def test_a_misaligned_method_is_rejected(run_cfg, samples_for, tmp_path):
    bad = tmp_path / "bad_method.py"
    bad.write_text("from slime.methods import Method\n\n"
                   "class Short(Method):\n"
                   "    def compute_advantages(self, samples):\n"
                   "        for s in samples:\n"
                   "            s.advantages = [1.0]\n"
                   "        return samples, {}\n")
    spec = f"{bad}:Short"
    with pytest.raises((AssertionError, ValueError)):
        assert_method_contract(load_method_class(spec), _cfg(run_cfg, spec), samples_for(hints=False))
