"""The main job's orchestration (see :mod:`openclaw_rl.main_job` for what it does)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from openclaw_rl.main_job.progress import StepProgress, console_to_log
from openclaw_rl.models import DEFAULT_MODEL
from openclaw_rl.preferences import DEFAULT_PREFERENCE, PREFERENCES, get_preference
from openclaw_rl.rollout.history import HistoryPathError, history_kind
from slime.omp import usable_cores

API_KEY = "sk-local"
#: torch threads of the server that answers the simulated user (the trainer takes the other cores)
SERVER_THREADS = 1
#: trainer flags per ``--method`` (``make run METHOD=rl|opd|combine``). Combine, on the embedded model:
#: - the batch's mean reward is subtracted from its RL-branch rewards (``batch-mean``): the user rejects
#:   most of the base model's replies, and without a baseline a batch of rejections pushes down
#:   everything sampled, the name with it;
#: - the OPD branch weighs 0.1 of the RL branch: at 135M the teacher (the same model with the hint in
#:   its prompt) meets the preference less often than the model without it (0.175 vs 0.250), so its
#:   log-prob gap pulls away from the name; runs at weight 1 lost the name for their first 4-8 steps
#:   (docs/learning.md, "A user who wants the question answered"). The launch scripts keep 1.0.
METHOD_ARGS = {"rl": ("--advantage-estimator", "broadcast"),
               "opd": ("--advantage-estimator", "opd", "--opd-teacher", "base"),
               "combine": ("--advantage-estimator", "combine", "--opd-teacher", "base",
                           "--combine-rl-baseline", "batch-mean", "--combine-w-opd", "0.1")}
#: train steps of ``make run`` (without ``--history``) and judged turns per step. 18 steps of 24 train 432
#: turns in few optimizer steps with a less noisy batch. With Adam a step moves the weights by about the
#: learning rate whatever the batch, so more steps drift the reference NLL (24 noisy steps of 8 passed the
#: gate's 5 %), while a larger batch points each step better: batch 16 rose in 2 of 3 runs (0.900 / 0.425 /
#: 0.550), batch 24 more steadily (docs/learning.md, "Fewer, larger steps")
DEFAULT_STEPS = 18
DEFAULT_BATCH_SIZE = 24
#: judged turns per step of ``--history`` / ``--history-first`` (docs/history.md measured it)
HISTORY_BATCH_SIZE = 8


def parse_main_args(argv: list[str] | None) -> argparse.Namespace:
    """The main job's flags (``make run ARGS="..."``)."""
    p = argparse.ArgumentParser(prog="make run", description="The main job on the embedded model.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model-path", default=DEFAULT_MODEL, help="policy to serve and train")
    p.add_argument("--backend", choices=["transformers", "vllm", "sglang"], default="transformers",
                   help="the policy server's engine (openclaw-rl serve --backend; vllm needs `make vllm`)")
    p.add_argument("--method", choices=sorted(METHOD_ARGS), default="combine",
                   help="rl (Binary RL), opd (on-policy distillation) or combine (both)")
    p.add_argument("--preference", choices=sorted(PREFERENCES), default=DEFAULT_PREFERENCE,
                   help="what the simulated user asks for (docs/learning.md: how it was chosen)")
    p.add_argument("--steps", type=int, default=None,
                   help=f"train steps on live traffic (weight versions published); default {DEFAULT_STEPS}, and 0 (the only "
                        "value) with --history / --history-first, which stop at go-live")
    p.add_argument("--history", metavar="PATH",
                   help="history first: train on these earlier conversations (an OpenClaw state folder, a "
                        "trajectory bundle, a trajectory store or a session file; docs/history.md) before going "
                        "live, then measure the held-out questions at go-live")
    p.add_argument("--history-first", action="store_true",
                   help="history first with the simulated user's earlier sessions with the base model as the "
                        "history (made first, --history-max-turns main turns; openclaw_rl/main_job/history_first.py)")
    p.add_argument("--history-max-turns", type=int, default=96,
                   help="most history turns judged and trained (the most recent first)")
    p.add_argument("--batch-size", type=int, default=None,
                   help=f"judged turns per train step; default {DEFAULT_BATCH_SIZE}, and {HISTORY_BATCH_SIZE} with "
                        "--history / --history-first")
    p.add_argument("--max-tokens", type=int, default=32, help="reply budget of the simulated user's turns")
    p.add_argument("--held-out", type=int, default=40, help="held-out questions (never trained on)")
    p.add_argument("--eval-max-tokens", type=int, default=32, help="reply budget of held-out questions")
    p.add_argument("--lr", type=float, default=1e-3,
                   help="LoRA learning rate (2e-3 with the newest turns first drifted the reference NLL past the gate's "
                        "5%% by step 12: docs/learning.md)")
    p.add_argument("--lora-rank", type=int, default=8)
    p.add_argument("--kl-coef", type=float, default=0.02,
                   help="KL penalty to the base policy (low_var_kl; 0 turns it off): keeps the policy from "
                        "drifting into what only the reward likes (0.1 pulled learned runs back to the base: "
                        "docs/learning.md)")
    p.add_argument("--promotion-gate", choices=("enforce", "log", "off"), default="enforce",
                   help="check each new weight version before it is served (slime/guards/promotion.py)")
    p.add_argument("--on-gate-failure", choices=("continue", "pause"), default="continue",
                   help="after a rejected version: train on from the last good weights, or stop training")
    p.add_argument("--gate-holdout-every", type=int, default=8,
                   help="hold every N-th judged turn out of training for the gate (0: none)")
    p.add_argument("--trainer-args", default="",
                   help="more trainer flags, appended as given (e.g. \"--custom-rm-path my_rm.py\")")
    p.add_argument("--prm-mode", default=None, help="PRM judge mode (default: the trainer's default)")
    p.add_argument("--concurrency", type=int, default=2, help="simulated users talking at once")
    p.add_argument("--no-reserve", action="store_true",
                   help="skip re-serving the saved checkpoint on a fresh server at the end")
    p.add_argument("--out", default="outputs/main-job", help="a time-stamped run folder is made here")
    a = p.parse_args(argv)
    if a.history and a.history_first:
        p.error("give --history PATH (your history) or --history-first (the simulated user's), not both")
    a.history_variant = bool(a.history or a.history_first)
    if a.history_variant:
        if a.steps:
            p.error("--history / --history-first stop at go-live (--steps 0): live training after the history is "
                    "the launch scripts' HISTORY_PATH")
        a.steps = 0
        if a.history_max_turns < 1:
            p.error("--history-max-turns must be >= 1")
        if a.history:
            try:
                history_kind(a.history)
            except HistoryPathError as exc:
                p.error(f"--history {exc}")
    elif a.steps is None:
        a.steps = DEFAULT_STEPS
    if a.batch_size is None:
        a.batch_size = HISTORY_BATCH_SIZE if a.history_variant else DEFAULT_BATCH_SIZE
    for flag in ("steps", "batch_size", "max_tokens", "eval_max_tokens", "concurrency", "lora_rank"):
        if getattr(a, flag) < (0 if flag == "steps" and a.history_variant else 1):
            p.error(f"--{flag.replace('_', '-')} must be >= 1")
    return a


def trainer_argv(a: argparse.Namespace, base: str, out: Path) -> list[str]:
    """The trainer's command line for this run (slime's flags)."""
    judge = ["--prm-mode", a.prm_mode] if a.prm_mode else []
    return ["--model-path", a.model_path, "--server-url", base, "--api-key", API_KEY,
            "--rl-buffer-dir", str(out / "rl_buffer"), "--save", str(out / "ckpt"), "--save-interval", "1000000",
            "--log-dir", str(out / "logs"), "--num-rollout", str(a.steps),
            "--rollout-batch-size", str(a.batch_size), *METHOD_ARGS[a.method],
            "--use-lora", "--lora-rank", str(a.lora_rank), "--lr", str(a.lr), "--eps-clip", "0.2",
            "--eps-clip-high", "0.28", "--use-tis", "--max-staleness", "2",
            # the users talk faster than the trainer trains (2 of 3 judged turns go unused): train the newest,
            # not turns that are always the full 2 versions behind (docs/learning.md, "Fewer, larger steps")
            "--sample-order", "newest", "--majority-vote-n", "1",
            "--num-judge-workers", "1", "--rollout-max-response-len", str(a.max_tokens),
            # the server answers the user with one thread while the trainer trains: the trainer takes the
            # other cores, not all of them (2 threads on 2 busy cores: train and gate 2-3x slower)
            "--train-threads", str(max(1, usable_cores() - SERVER_THREADS)),
            # the simulated user reacts to the reply it saw, cut or not (the preference shows in the
            # first words), so cut replies are trained, not masked (docs/learning.md)
            "--truncated-replies", "train", "--promotion-gate", a.promotion_gate,
            "--on-gate-failure", a.on_gate_failure, "--gate-holdout-every", str(a.gate_holdout_every),
            *(("--use-kl-loss", "--kl-loss-coef", str(a.kl_coef), "--kl-loss-type", "low_var_kl") if a.kl_coef > 0
              else ()),
            *judge, *shlex.split(a.trainer_args)]


def report_lines(result: dict) -> list[str]:
    """The run's outcome in a few plain lines: satisfaction, quality, the promotion gate's verdicts,
    what the collapse guard did (``result["guard"]``: skipped and clipped steps, its rollback / pause events)."""
    q, nll, m = result["quality"], result["reference_nll"], result["mcnemar"]
    lines = [f"held-out satisfaction {result['satisfaction_before']:.3f} -> {result['satisfaction_after']:.3f} "
             f"(McNemar p = {m['p_value']:.2g})",
             f"over-applied replies {q['before']['over_application']['rate']:.3f} -> "
             f"{q['after']['over_application']['rate']:.3f}; distinct word pairs "
             f"{q['before']['distinct_pairs']['mean']:.3f} -> {q['after']['distinct_pairs']['mean']:.3f}; words per "
             f"reply {q['before']['words']['mean']:.1f} -> {q['after']['words']['mean']:.1f}"
             + (f"; on topic {q['before']['on_topic']['rate']:.3f} -> {q['after']['on_topic']['rate']:.3f}"
                if "on_topic" in q["after"] else "")
             + (f"; reference NLL {nll['rise']:+.1%}" if nll.get("rise") is not None else "")]
    versions = result.get("gate_versions") or []
    if versions:
        lines.append(f"promotion gate ({result['promotion_gate'].get('mode')}): {sum(v['passed'] for v in versions)} of "
                     f"{len(versions)} versions passed")
        lines += [f"  version {v['version']} (step {v['step']}) rejected: {'; '.join(v['failed'])}"
                  for v in versions if not v["passed"]]
    guard = result.get("guard") or {}
    if guard.get("skipped_steps"):
        lines.append(f"collapse guard: steps {', '.join(map(str, guard['skipped_steps']))} skipped")
    if guard.get("clipped_steps"):
        lines.append(f"collapse guard: steps {', '.join(map(str, guard['clipped_steps']))} kept with a clipped gradient")
    lines += [f"  {event}" for event in guard.get("events", [])]
    if result.get("paused"):
        lines.append(f"training paused: {result['paused']}")
    return lines


def _reserve(a, out: Path, test_q, pref) -> dict | None:
    """Serve the saved checkpoint on a fresh server and measure the held-out questions again."""
    from openclaw_rl.evaluation.targets import resolve_target, serving
    from openclaw_rl.main_job.heldout import measure

    ckpt = out / "ckpt"
    if a.no_reserve or not (ckpt / "checkpoint-latest").exists():
        return None
    target = resolve_target(str(ckpt), base_model=a.model_path)
    (out / "reserve").mkdir(exist_ok=True)
    with serving(target, out / "reserve", torch_threads=2) as ep:
        base = ep.base_url.rsplit("/v1", 1)[0]
        return measure(base, ep.api_key, test_q, pref, a.eval_max_tokens, model=target.label)


def main(argv: list[str] | None = None) -> int:
    """Run the main job; returns 0, or 1 if any request of the simulated user failed.

    ``--history`` / ``--history-first`` select the history-first variant, which
    ``python -m openclaw_rl.main_job`` runs instead (:mod:`openclaw_rl.main_job.history_first`).

    Raises:
        SystemExit(2): bad flags (argparse's one-line error, and the history variant here).
    """
    import ray

    from openclaw_rl.capture.store import TrajectoryStore
    from openclaw_rl.main_job.heldout import compare, measure
    from openclaw_rl.main_job.quality import quality_summary, reference_nll
    from openclaw_rl.main_job.questions import question_sets
    from openclaw_rl.main_job.report import joined_turns, judge_report, per_version, plot_learning
    from openclaw_rl.main_job.traffic import traffic_counts
    from openclaw_rl.main_job.user import UserDriver
    from openclaw_rl.server.launcher import running_server
    from slime.config.run_args import parse_run_args
    from slime.train import train

    a = parse_main_args(argv)
    if a.history_variant:
        raise SystemExit("--history/--history-first: run python -m openclaw_rl.main_job (history_first.run_history_first)")
    pref = get_preference(a.preference)
    out = Path(a.out) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    train_q, test_q = question_sets(a.held_out)
    t0 = time.time()
    console = console_to_log(out / "run.log")  # Ray's and the libraries' lines go to the log file

    def say(line: str) -> None:
        """A line for the person at the terminal (and the log)."""
        console.write(line + "\n")
        print(line, flush=True)

    say(f"[main job] {a.method} on {a.model_path}; the user asks: {pref.instruction!r}")
    say(f"[main job] full log: {out / 'run.log'}")
    with running_server(a.model_path, out / "rl_buffer", "--served-model-name", "policy", "--backend", a.backend,
                        "--torch-threads", str(SERVER_THREADS), "--metrics-dir", str(out / "logs"),
                        "--run-log-dir", str(out), api_key=API_KEY,
                        log_dir=out,
                        timeout=180.0 if a.backend == "transformers" else 960.0) as server:
        base = server.base_url.rsplit("/v1", 1)[0]
        say(f"[main job] serving at {server.base_url}; dashboard: {base}/dashboard?key={API_KEY}")
        say(f"[main job] measuring {len(test_q)} held-out questions before training...")
        before = measure(base, API_KEY, test_q, pref, a.eval_max_tokens, concurrency=a.concurrency)
        say(f"[main job] before: satisfaction {before['rate']:.3f} ({before['seconds']} s); training {a.steps} steps...")
        cfg = parse_run_args(trainer_argv(a, base, out))
        driver = UserDriver(base, API_KEY, train_q, pref, a.max_tokens, concurrency=a.concurrency).start()
        progress = StepProgress(out / "logs", a.steps, console, lambda: [t.satisfied for t in driver.truth]).start()
        try:
            summary = train(cfg)
        finally:
            progress.stop()
            driver.stop()
            ray.shutdown()
        after = measure(base, API_KEY, test_q, pref, a.eval_max_tokens, concurrency=a.concurrency)
        say(f"[main job] after: satisfaction {after['rate']:.3f}; re-serving the checkpoint...")
    reserved = _reserve(a, out, test_q, pref)
    terms = pref.over_terms or pref.hint_terms
    texts = {q.id: q.text for q in test_q}
    quality = {"before": quality_summary(before["replies"], terms, texts, before.get("cut")),
               "after": quality_summary(after["replies"], terms, texts, after.get("cut")),
               "reserved": None if reserved is None else quality_summary(reserved["replies"], terms, texts,
                                                                          reserved.get("cut"))}
    ckpt = out / "ckpt" / "checkpoint-latest"
    nll = reference_nll(a.model_path, ckpt if ckpt.exists() else None)
    store = TrajectoryStore(out / "rl_buffer")
    rows, unmatched = joined_turns(store, driver.truth)
    judges = judge_report(rows, pref.hint_terms)
    versions = per_version(rows)
    heldout = {"before": before, "after": after, "comparison": compare(before, after)}
    metrics = [json.loads(line) for p in sorted((out / "logs").rglob("metrics.jsonl"))
               for line in p.read_text().splitlines()]
    plot = plot_learning(out / "learning.png", versions, metrics, heldout,
                         f"{a.method} on {a.model_path}: {pref.instruction}", quality=quality, nll=nll)
    gate = summary.get("promotion_gate") or {}
    result = {**traffic_counts(store, a.method), "method": a.method, "preference": pref.name,
              "model": a.model_path, "backend": a.backend, "samples_trained": summary["samples_trained"], "steps": summary["steps"],
              "versions_published": summary["versions_published"], "failed_requests": driver.failed,
              "user_sessions": driver.sessions,
              "satisfaction_before": before["rate"], "satisfaction_after": after["rate"],
              "satisfaction_before_ci95": before["ci95"], "satisfaction_after_ci95": after["ci95"],
              "satisfaction_delta": heldout["comparison"]["delta"],
              "satisfaction_delta_ci95": heldout["comparison"]["delta_ci95"],
              "mcnemar": heldout["comparison"]["mcnemar"],
              "satisfaction_reserved": None if reserved is None else reserved["rate"],
              "satisfaction_reserved_ci95": None if reserved is None else reserved["ci95"],
              "quality": quality, "reference_nll": nll,
              "promotion_gate": {k: v for k, v in gate.items() if k != "versions"},
              "gate_versions": gate.get("versions", []),
              "gate_acceptance": (sum(v["passed"] for v in gate["versions"]) / len(gate["versions"])
                                  if gate.get("versions") else None),
              "paused": summary.get("paused"),
              "guard": {"skipped_steps": [int(m["step"]) for m in metrics if m.get("guard/skipped")],
                        "clipped_steps": [int(m["step"]) for m in metrics
                                          if m.get("guard/clipped") and not m.get("guard/skipped")],
                        "events": [m["guard/event"] for m in metrics if m.get("guard/event")]},
              "held_out_questions": len(test_q), "judge": judges, "unmatched_turns": unmatched,
              "per_version": versions, "plot": str(plot), "reward_loss_plot": summary.get("plot"),
              "buffer": str(store.path), "wall_s": round(time.time() - t0, 1)}
    store.close()
    (out / "heldout.json").write_text(json.dumps({"before": before, "after": after, "reserved": reserved},
                                                 indent=1))
    (out / "summary.json").write_text(json.dumps(result, indent=2))
    print("\n== main job summary ==\n" + json.dumps(result, indent=2), flush=True)  # the log
    say("\n" + "\n".join(report_lines(result)))
    say(f"[main job] summary: {out / 'summary.json'}; full log: {out / 'run.log'}")
    return 1 if driver.failed else 0


if __name__ == "__main__":
    sys.exit(main())
