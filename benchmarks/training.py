"""Training benchmark: what :class:`slime.trainer.backend.TrainingBackend` costs against a bare loop.

Run from the repository root::

    python benchmarks/training.py [--model-path builtin:tiny-qwen3] [--batch-size 8]
                                  [--micro-batch-size 2] [--prompt-tokens 48] [--response-tokens 48]
                                  [--repeats 5] [--use-lora] [--torch-threads N] [--json OUT]
                                  [--actors 1 2] [--device cpu|cuda] [--anchor]

One run, everything in this process:

1. **Rollouts from the real serving engine.** ``TransformersEngine`` (the CPU engine the server
   uses: KV cache, one token at a time) samples ``--batch-size`` responses at temperature 1
   (top-p 1) to chat-template prompts; each becomes a :class:`~slime.record.sample.Sample` with the
   engine's sampling log-probs and weight version 0, and a random advantage.
2. **Train/rollout log-prob mismatch at step 0.** A fresh ``TrainingBackend`` on the same weights
   runs one ``train_step``; ``train_rollout_logprob_abs_diff`` is the mean
   ``|trainer old logprob - engine logprob|`` over the loss tokens (goal <= 1e-3: only kernel
   numerics differ, float32 on both sides).
3. **Train-step throughput.** The same global batch, the same micro-batches, interleaved round by
   round so all contenders see the same background load:
   (a) ``TrainingBackend.train_step`` (no-grad old-logprob pass + grad pass with chunked LM head,
   PPO loss over the global token count, clip, AdamW step);
   (b) the same with ``recompute_old_logprobs=False`` (one forward pass fewer);
   (c) a bare transformers loop: ``model(input_ids).logits`` -> ``log_softmax`` -> REINFORCE loss on
   the response tokens -> ``backward`` per micro-batch -> clip -> AdamW step.
   Tokens/s counts prompt + response tokens per second of the whole step (median over
   ``--repeats``); ``ratio`` is backend / bare (goal: close to 1; the backend does strictly more work).
4. **Data-parallel train actors.** For each of ``--actors`` (default ``1 2``) a
   :class:`slime.orchestration.train_group.TrainGroup` of that many Ray train actors (FSDP2; gloo on CPU, NCCL on
   GPUs) trains the same global batch, the groups one step each in turn (same background load);
   tokens/s is the batch's tokens per second of the driver's whole ``train_step`` call (Ray
   included), median over ``--repeats`` after one warm-up step, printed side by side with the
   ratio to 1 actor. On CPU the actors share the machine's cores (each takes
   ``cores / N`` threads), so the ratio shows the cost of sharding and the collectives, not a speed-up;
   on GPUs each actor has its own.

``--device cuda`` trains on the GPU (bfloat16; the Ray cluster declares the machine's GPUs and
each train actor takes one; a count above the GPUs is skipped). ``--anchor`` replaces the tiny
model and the engine's rollouts by the anchor workload: a Qwen3-0.6B-shaped model (28 layers,
hidden 1024, random weights) and random token sequences of ``--anchor-seq-len`` (2048) tokens,
half of them response (compare with prime-rl's published ~11.9k tokens/s on one H100):
``python benchmarks/training.py --device cuda --anchor --actors 1``.

Other jobs may share the CPU: compare ratios taken in the same run, not absolute numbers across
runs. ``--torch-threads N`` sets torch's intra-op threads (default: torch's own).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `python benchmarks/training.py` finds slime and openclaw_rl

import torch  # noqa: E402

from openclaw_rl.engine import SamplingParams  # noqa: E402
from openclaw_rl.engine.transformers_engine import TransformersEngine  # noqa: E402
from openclaw_rl.models import load_model, load_tokenizer  # noqa: E402
from slime.config.arguments import parse_args  # noqa: E402
from slime.trainer.backend import DEFAULT_LORA_TARGET_MODULES, TrainingBackend  # noqa: E402
from slime.record.batch import collate_samples, split_micro_batches  # noqa: E402
from slime.record.sample import Sample  # noqa: E402

TOPICS = ("tide pools", "bread baking", "binary search", "volcanoes", "chess openings",
          "bicycle repair", "prime numbers", "jazz harmony", "rain forests", "compilers")


def make_prompts(tokenizer, n: int, target_tokens: int) -> list[list[int]]:
    """``n`` chat-template prompts of about ``target_tokens`` tokens each."""
    prompts = []
    for i in range(n):
        words = f"Tell me about {TOPICS[i % len(TOPICS)]}."
        ids: list[int] = []
        while True:
            text = tokenizer.apply_chat_template([{"role": "user", "content": words}],
                                                 add_generation_prompt=True, tokenize=False)
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) >= target_tokens:
                break
            words += f" And more about {TOPICS[(i + len(words)) % len(TOPICS)]}, please."
        prompts.append(ids)
    return prompts


async def rollouts(engine: TransformersEngine, prompts: list[list[int]], max_new: int) -> list[Sample]:
    """Sample one response per prompt (temperature 1, top-p 1) and wrap it as a Sample."""
    g = torch.Generator().manual_seed(0)
    samples = []
    for i, prompt in enumerate(prompts):
        out = await engine.generate(prompt, SamplingParams(max_new_tokens=max_new, temperature=1.0, seed=i))
        adv = float(torch.randn(1, generator=g))
        samples.append(Sample(tokens=prompt + out.token_ids, response_length=len(out.token_ids),
                              rollout_log_probs=out.logprobs, advantages=[adv] * len(out.token_ids),
                              weight_version=out.weight_version))
    return samples


class BareLoop:
    """The reference: plain transformers forward + backward + AdamW on the same micro-batches."""

    def __init__(self, model_path: str, cfg, use_lora: bool, device: torch.device, dtype: torch.dtype):
        torch.manual_seed(cfg.seed)
        self.device = device
        model = load_model(model_path, dtype=dtype).to(device)
        if use_lora:
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(model, LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha,
                                                     target_modules=list(DEFAULT_LORA_TARGET_MODULES),
                                                     task_type="CAUSAL_LM"))
        self.model = model
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.opt = torch.optim.AdamW(self.params, lr=cfg.lr, betas=(cfg.adam_beta1, cfg.adam_beta2))
        self.clip = cfg.clip_grad
        self.mbs = cfg.micro_batch_size

    def train_step(self, samples: list[Sample]) -> float:
        """One step; returns wall seconds."""
        t0 = time.perf_counter()
        n_tok = float(sum(s.num_loss_tokens for s in samples))
        self.model.train()
        self.opt.zero_grad(set_to_none=True)
        for mb in split_micro_batches(samples, self.mbs):
            b = collate_samples(mb, device=self.device)
            logits = self.model(input_ids=b.input_ids_B_T, attention_mask=b.attention_mask_B_T).logits
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            logp = logp.gather(-1, b.input_ids_B_T[:, 1:, None]).squeeze(-1)
            mask = b.loss_mask_B_T[:, 1:]
            loss = -(b.advantages_B_T[:, 1:] * logp * mask).sum() / n_tok
            loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, self.clip if self.clip > 0 else float("inf"))
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.model.eval()
        return time.perf_counter() - t0


def anchor_model(folder: Path) -> str:
    """Write a Qwen3-0.6B-shaped model with random weights (seeded) and the Qwen tokenizer to
    ``folder``; returns its path."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from openclaw_rl.models import build_qwen_tokenizer

    config = Qwen3Config(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                         num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                         tie_word_embeddings=True)
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).save_pretrained(folder)
    build_qwen_tokenizer().save_pretrained(folder)
    return str(folder)


def random_samples(n: int, seq_len: int, vocab: int = 151643) -> list[Sample]:
    """``n`` samples of ``seq_len`` random tokens, the second half the response, random advantages
    and rollout log-probs of -1 (the anchor workload: no engine)."""
    g = torch.Generator().manual_seed(0)
    resp = seq_len // 2
    return [Sample(tokens=torch.randint(0, vocab, (seq_len,), generator=g).tolist(), response_length=resp,
                   rollout_log_probs=[-1.0] * resp, advantages=[float(torch.randn(1, generator=g))] * resp,
                   weight_version=0) for _ in range(n)]


def data_parallel(args, flags: list[str], samples: list[Sample]) -> dict:
    """Tokens/s of ``train_step`` on :class:`slime.orchestration.train_group.TrainGroup` s of ``args.actors``
    train actors (a private local Ray cluster); ``{"tokens_per_s": {N: ...}, "ratio_vs_1": {N: ...}}``."""
    import ray

    from slime.orchestration.train_group import TrainGroup

    gpus = torch.cuda.device_count() if args.device == "cuda" else 0
    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False,
             num_cpus=max(args.actors), num_gpus=gpus)
    seq_tokens = sum(len(s.tokens) for s in samples)
    groups: dict[int, TrainGroup] = {}
    times: dict[int, list[float]] = {}
    try:
        for n in args.actors:
            if args.device == "cuda" and n > gpus - sum(groups):
                print(f"{n} actors: skipped (not enough free GPUs of {gpus})")
                continue
            groups[n] = TrainGroup(parse_args([*flags, "--actor-num-gpus-per-node", str(n)]))
            groups[n].train_step(samples)  # warm-up
            times[n] = []
        for _ in range(args.repeats):  # interleaved, so every group sees the same background load
            for n, group in groups.items():
                t0 = time.perf_counter()
                group.train_step(samples)
                times[n].append(time.perf_counter() - t0)
    finally:
        for group in groups.values():
            group.shutdown()
        ray.shutdown()
    tps = {n: seq_tokens / statistics.median(t) for n, t in times.items()}
    base = tps.get(1)
    ratios = {n: v / base for n, v in tps.items()} if base else {}
    print("data-parallel train actors (driver's train_step, median):")
    for n, v in tps.items():
        print(f"{n:>4} actor(s): {v:8.1f} tokens/s" + (f"  ratio vs 1 actor {ratios[n]:.2f}" if ratios else ""))
    return {"tokens_per_s": tps, "ratio_vs_1": ratios}


def run(args) -> dict:
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if args.anchor:
        import tempfile
        args.model_path = anchor_model(Path(tempfile.mkdtemp(prefix="anchor-qwen3-0.6b-")))
    flags = ["--model-path", args.model_path, "--rollout-batch-size", str(args.batch_size),
             "--global-batch-size", str(args.batch_size), "--micro-batch-size", str(args.micro_batch_size),
             "--lr", "1e-5", "--rollout-temperature", "1.0"]
    if args.use_lora:
        flags += ["--use-lora", "--lora-rank", "16"]
    cfg = parse_args(flags)
    tokenizer = load_tokenizer(args.model_path)

    t0 = time.perf_counter()
    if args.anchor:
        samples = random_samples(args.batch_size, args.anchor_seq_len)
    else:
        engine = TransformersEngine(args.model_path)
        try:
            samples = asyncio.run(rollouts(engine, make_prompts(tokenizer, args.batch_size, args.prompt_tokens),
                                           args.response_tokens))
        finally:
            asyncio.run(engine.aclose())
    rollout_s = time.perf_counter() - t0
    seq_tokens = sum(len(s.tokens) for s in samples)
    print(f"rollouts: {len(samples)} samples, {seq_tokens} tokens "
          f"({sum(s.response_length for s in samples)} response) in {rollout_s:.1f}s")

    # ---- step-0 mismatch: a fresh backend on the weights that sampled the rollouts
    backend = TrainingBackend(cfg, tokenizer, device=device, dtype=dtype)
    reuse = TrainingBackend(cfg, tokenizer, recompute_old_logprobs=False, device=device, dtype=dtype)
    bare = BareLoop(args.model_path, cfg, args.use_lora, device, dtype)
    first = backend.train_step(samples)
    first_reuse = reuse.train_step(samples)
    bare.train_step(samples)  # warm-up
    mismatch = {
        "train_rollout_logprob_abs_diff": first["train_rollout_logprob_abs_diff"],
        "train_rollout_logprob_abs_diff_max": first["train_rollout_logprob_abs_diff_max"],
        "train_rollout_logprob_abs_diff_reuse_grad_pass": first_reuse["train_rollout_logprob_abs_diff"],
        "goal": 1e-3,
    }
    mismatch["ok"] = mismatch["train_rollout_logprob_abs_diff"] <= 1e-3
    if args.anchor:  # random sequences: no engine log-probs to compare with
        mismatch = {"skipped": "anchor workload (no engine rollouts)"}
    else:
        print(f"step-0 mean |train - rollout logprob| = {mismatch['train_rollout_logprob_abs_diff']:.3e} "
              f"(max {mismatch['train_rollout_logprob_abs_diff_max']:.3e}; goal <= 1e-3: "
              f"{'ok' if mismatch['ok'] else 'MISSED'})")

    # ---- throughput, interleaved
    times = {"backend": [], "backend_reuse_old_logprobs": [], "bare": []}
    for _ in range(args.repeats):
        times["backend"].append(backend.train_step(samples)["step_time_s"])
        times["backend_reuse_old_logprobs"].append(reuse.train_step(samples)["step_time_s"])
        times["bare"].append(bare.train_step(samples))
    tps = {k: seq_tokens / statistics.median(v) for k, v in times.items()}
    res = {
        "model_path": args.model_path, "use_lora": args.use_lora, "batch_size": args.batch_size,
        "micro_batch_size": args.micro_batch_size, "seq_tokens": seq_tokens,
        "loss_tokens": first["n_tokens"], "repeats": args.repeats, "torch_threads": torch.get_num_threads(),
        "mismatch": mismatch,
        "tokens_per_s": tps,
        "step_s_median": {k: statistics.median(v) for k, v in times.items()},
        "ratio_backend_vs_bare": tps["backend"] / tps["bare"],
        "ratio_backend_reuse_vs_bare": tps["backend_reuse_old_logprobs"] / tps["bare"],
        "device": args.device, "anchor": args.anchor,
    }
    for k, v in tps.items():
        print(f"{k:>28}: {v:8.1f} tokens/s  (median step {res['step_s_median'][k]:.3f}s)")
    print(f"ratio backend / bare = {res['ratio_backend_vs_bare']:.3f}; "
          f"with recompute_old_logprobs=False = {res['ratio_backend_reuse_vs_bare']:.3f}")
    del backend, reuse, bare  # the train actors get the memory
    if device.type == "cuda":
        import gc
        gc.collect()
        torch.cuda.empty_cache()
    if args.actors:
        res["data_parallel"] = data_parallel(args, flags, samples)
    return res


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--batch-size", type=int, default=8, help="samples per global batch (one step)")
    p.add_argument("--micro-batch-size", type=int, default=2)
    p.add_argument("--prompt-tokens", type=int, default=48, help="approximate prompt length")
    p.add_argument("--response-tokens", type=int, default=48, help="max new tokens per rollout")
    p.add_argument("--repeats", type=int, default=5, help="timed steps per contender")
    p.add_argument("--use-lora", action="store_true", help="train a LoRA adapter (both contenders)")
    p.add_argument("--torch-threads", type=int, default=0, help="torch intra-op threads (0: default)")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    p.add_argument("--actors", type=int, nargs="*", default=[1, 2],
                   help="train-actor counts of the data-parallel section, side by side (none: skip it)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="train on this device (cuda: bf16)")
    p.add_argument("--anchor", action="store_true",
                   help="the anchor workload: Qwen3-0.6B-shaped random model, random --anchor-seq-len sequences")
    p.add_argument("--anchor-seq-len", type=int, default=2048, help="tokens per sample with --anchor")
    args = p.parse_args(argv)
    res = run(args)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n")
        print(f"wrote {args.json}")
    return res


if __name__ == "__main__":
    main()
