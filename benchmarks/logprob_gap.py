"""Train/rollout log-prob gap at step 0 for a mix of sampling temperatures and top-p values.

    python benchmarks/logprob_gap.py [--model-path builtin:tiny-qwen3] [--per-setting 4] [--max-new 24] [--json OUT]

The serving engine (:class:`openclaw_rl.engine.TransformersEngine`, in process) samples
``--per-setting`` responses for each of the settings below; each becomes a stored turn
(:class:`openclaw_rl.capture.records.TurnRecord` with its temperature and top-p) and a training
sample through the same conversion the live rollout uses (:func:`openclaw_rl.rollout.samples.turn_to_sample`).
One training backend with the same weights then makes its first step on the whole mixed batch
with TIS on, and the script prints, per setting and overall, the mean and max
``|trainer old log-prob - rollout log-prob|`` over response tokens and the TIS weights
``exp(old - rollout)`` (mean, min, max).

``--ignore-sampling-params`` drops each sample's recorded temperature / top-p, which is what the
trainer did before it read them: every log-prob at one global ``--rollout-temperature`` (1.0),
full distribution.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from openclaw_rl.capture.records import TurnRecord  # noqa: E402
from openclaw_rl.engine import SamplingParams  # noqa: E402
from openclaw_rl.engine.transformers_engine import TransformersEngine  # noqa: E402
from openclaw_rl.models import load_tokenizer  # noqa: E402
from openclaw_rl.rollout.samples import turn_to_sample  # noqa: E402
from slime.config.arguments import parse_args  # noqa: E402
from slime.trainer.backend import TrainingBackend  # noqa: E402

#: (temperature, top_p) of the mixed batch; temperature 0 is greedy
SETTINGS = ((1.0, 1.0), (0.7, 0.9), (0.7, 1.0), (1.3, 0.5), (0.5, 0.95), (0.0, 1.0))


async def sample_turns(engine: TransformersEngine, tokenizer, per_setting: int, max_new: int) -> list[TurnRecord]:
    """``per_setting`` stored turns per setting of :data:`SETTINGS`, sampled by ``engine``."""
    turns = []
    for k, (t, p) in enumerate(SETTINGS):
        for i in range(per_setting):
            text = tokenizer.apply_chat_template([{"role": "user", "content": f"Question {i} about setting {k}."}],
                                                 add_generation_prompt=True, tokenize=False)
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            out = await engine.generate(ids, SamplingParams(max_new_tokens=max_new, temperature=t, top_p=p,
                                                            seed=100 * k + i))
            turns.append(TurnRecord(session_id=f"s{k}-{i}", turn_type="main", messages=[], prompt_text=text,
                                    prompt_ids=ids, response_ids=out.token_ids, response_logprobs=out.logprobs,
                                    response_text="", finish_reason=out.finish_reason,
                                    weight_version=out.weight_version, temperature=t, top_p=p,
                                    turn_uid=f"s{k}-{i}:0", turn_index=0, id=len(turns) + 1))
    return turns


def measure(model_path: str, per_setting: int, max_new: int, ignore_params: bool) -> dict:
    """Sample, build samples, run the first training step; returns the per-setting numbers."""
    engine = TransformersEngine(model_path)
    tokenizer = load_tokenizer(model_path)
    turns = asyncio.run(sample_turns(engine, tokenizer, per_setting, max_new))
    samples = []
    for turn in turns:
        s = turn_to_sample(turn, 1.0, True)
        if ignore_params:
            s.sampling_temperature = s.sampling_top_p = None
        s.advantages = [1.0] * s.response_length
        samples.append(s)
    cfg = parse_args(["--model-path", model_path, "--rollout-batch-size", str(len(samples)), "--use-tis",
                      "--tis-cap", "1000", "--lr", "1e-6", "--rollout-temperature", "1.0"])
    backend = TrainingBackend(cfg)
    old = backend.policy_logprobs(samples)  # the weights of the first step, before its update
    step = backend.train_step(samples)
    out = {"settings": {}, "train_step": {k: step[k] for k in ("train_rollout_logprob_abs_diff",
                                                                "train_rollout_logprob_abs_diff_max", "tis_weight")}}
    everything = []
    for k, (t, p) in enumerate(SETTINGS):
        diffs = []
        for s, lp in zip(samples[k * per_setting:(k + 1) * per_setting], old[k * per_setting:(k + 1) * per_setting]):
            diffs += [a - b for a, b in zip(lp, s.rollout_log_probs)]
        everything += diffs
        out["settings"][f"T={t} top_p={p}"] = _stats(diffs)
    out["all"] = _stats(everything)
    return out


def _stats(diffs: list[float]) -> dict:
    w = [float(torch.tensor(d).exp()) for d in diffs]
    return {"tokens": len(diffs), "gap_mean": statistics.fmean(abs(d) for d in diffs),
            "gap_max": max(abs(d) for d in diffs), "tis_mean": statistics.fmean(w), "tis_min": min(w),
            "tis_max": max(w)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--per-setting", type=int, default=4)
    p.add_argument("--max-new", type=int, default=24)
    p.add_argument("--ignore-sampling-params", action="store_true",
                   help="the old behaviour: one global temperature, full distribution")
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    res = measure(a.model_path, a.per_setting, a.max_new, a.ignore_sampling_params)
    mode = "one global temperature (before)" if a.ignore_sampling_params else "per-sample temperature/top-p"
    print(f"{a.model_path}, {mode}, {a.per_setting} responses x {a.max_new} tokens per setting")
    for name, st in {**res["settings"], "all settings": res["all"]}.items():
        print(f"  {name:22s} tokens {st['tokens']:4d}  |gap| mean {st['gap_mean']:.2e} max {st['gap_max']:.2e}  "
              f"TIS mean {st['tis_mean']:.4f} [{st['tis_min']:.4f}, {st['tis_max']:.4f}]")
    print("  train step metrics: " + ", ".join(f"{k} {v:.3e}" for k, v in res["train_step"].items()))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
