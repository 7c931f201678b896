"""Track 2 learning runs: the cold-started tiny policy, GRPO on real episodes, held-out before/after.

:func:`run` trains one family (:mod:`tests.support.track2_tasks`) from its cold-started model
(:mod:`tests.support.track2_cold_start`) with the pieces the launch scripts run, in this process
and without Ray (``slime/train.py``'s loop without its two actors):

* the rollout service (``--rollout-service openclaw``), which starts the real intercept server on
  the policy and publishes each step's weights to it;
* the prompt-dataset rollout (``--prompt-data``) with the family's own plugin file
  (``toolcall-rl/generate_with_retool.py`` / ``terminal-rl/generate.py`` / ``gui-rl/generate.py`` /
  ``swe-rl/generate.py``: ``generate`` and ``reward_func``), so every step of every episode goes through the server and the reward is
  the real sandboxed environment's score;
* sample admission, the run's method (``--advantage-estimator grpo``) and
  :class:`slime.trainer.backend.TrainingBackend`'s PPO step.

Before the first step and after the last, every held-out wording (never demonstrated, never
trained on) is played ``eval_samples`` times through the same plugin at the training temperature;
a pass is an episode the environment scored as solved. ``tests/test_track2_scripts.py`` runs the
launch scripts themselves end to end.
"""

from __future__ import annotations

import collections
import json
import math
import os
import statistics
import time
from contextlib import contextmanager
from pathlib import Path

from tests.support import track2_tasks

REPO = Path(__file__).resolve().parent.parent.parent
#: the RL recipe of both families (trainer flags; see docs/track2.md for why these values)
#: (measured 2026-12-01: LoRA lr 5e-3 with a KL(policy || cold start) penalty keeps the format while
#: the decision moves; without the KL the pass rate wandered, at lr 1e-2 the calls broke)
RL_FLAGS = ("--advantage-estimator", "grpo", "--eps-clip", "0.2", "--eps-clip-high", "0.28",
            "--use-lora", "--lora-rank", "16", "--lr", "5e-3", "--weight-decay", "0.0", "--rollout-temperature", "1.0",
            "--use-kl-loss", "--kl-loss-coef", "0.2", "--kl-loss-type", "low_var_kl",
            "--rollout-max-context-len", "2048")
# the collapse guard (issue 25) is on, as in a user's run: a LoRA's gradient norm per unit of
# advantage grows ~10x in its first steps as B leaves zero; the guard clips such a step's gradient
# and keeps it (slime.guards.collapse; skipping it stalled terminal's run at 15 of 20 steps)
DEFAULTS = {"steps": 20, "prompts_per_step": 4, "samples_per_prompt": 8, "eval_samples": 16, "max_response_len": 48,
            "max_turns": 3}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval (95 % by default) of ``k`` passes in ``n`` trials; ``(0, 1)`` for n=0."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


@contextmanager
def _environ(**values: str):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _config(family: str, model: Path, work: Path, data: Path, steps: int, prompts: int, samples: int,
            max_len: int, extra: tuple[str, ...]):
    from openclaw_rl.server.launcher import free_port
    from slime.config.run_args import parse_run_args

    plugin = REPO / track2_tasks.FAMILIES[family]["plugin"]
    return parse_run_args([
        "--model-path", str(model), "--prompt-data", str(data), "--input-key", "prompt", "--label-key", "label",
        "--metadata-key", "metadata", "--custom-generate-function-path", f"{plugin}:generate",
        "--custom-rm-path", f"{plugin}:reward_func", "--reward-key", "score", "--num-rollout", str(steps),
        "--rollout-batch-size", str(prompts), "--n-samples-per-prompt", str(samples),
        "--rollout-max-response-len", str(max_len), *RL_FLAGS, *extra,
        "--save", str(work / "ckpt"), "--log-dir", str(work / "logs"), "--rl-buffer-dir", str(work / "buf"),
        "--port", str(free_port()), "--api-key", "sk-track2", "--server-torch-threads", "1"])


def _groups(rollout_fn, args, rollout_id: int) -> list[list]:
    """One rollout step's episodes, one group (list of samples) per prompt, in prompt order."""
    from slime.plugins.calls import call_sync
    from slime.plugins.rollout import normalize_rollout_output

    return normalize_rollout_output(call_sync(rollout_fn, args, rollout_id, None), "prompt rollout")[0]


def _episode_scores(samples) -> list[float]:
    """The environment's score of each episode: the pieces of a trajectory split at a prefix break
    (samples sharing a ``Sample.trajectory``) count once."""
    scores: dict = {}
    for s in samples:
        md = s.metadata or {}
        key = (s.trajectory.group_index, s.trajectory.id) if s.trajectory is not None else id(s)
        scores[key] = max(scores.get(key, -1.0), md.get("env_score") or -1.0)
    return list(scores.values())


def _passes(samples) -> int:
    """Episodes the environment scored as solved (``env_score`` >= 1)."""
    return sum(1 for score in _episode_scores(samples) if score >= 1.0)


def _evaluate(rollout_fn, args, n_tasks: int) -> dict:
    """Every held-out task ``eval_samples`` times: passes, episodes (a trajectory split at a prefix
    break counts once), the Wilson 95 % interval, seconds per episode, passes per held-out wording
    (``per_task``) and the three commonest failing replies (first 40 characters, with counts)."""
    t0 = time.time()
    groups = _groups(rollout_fn, args, 0)
    samples = [s for g in groups for s in g]
    ok = [s for s in samples if s.status.value != "failed"]
    passes, episodes = _passes(ok), len(_episode_scores(samples))
    lo, hi = wilson(passes, episodes)
    out = {"passes": passes, "episodes": episodes, "tasks": n_tasks, "pass_rate": passes / max(1, episodes),
           "ci95": [round(lo, 3), round(hi, 3)], "failed": len(samples) - len(ok),
           "episode_s": round((time.time() - t0) / max(1, episodes), 3),
           "per_task": [_passes(g) for g in groups],
           "failing_replies": collections.Counter(
               " ".join(s.response.split())[:40] for s in samples
               if (s.metadata.get("env_score") or -1.0) < 1.0).most_common(3)}
    injected = [((s.metadata.get("env_info") or {}).get("injection") or {}) for s in samples]
    injected = [i for i in injected if i.get("injected")]
    if injected:  # swe: the injection detector's verdicts (openclaw_rl/envs/swe/injection.py)
        k = sum(1 for i in injected if i.get("followed"))
        lo, hi = wilson(k, len(injected))
        out.update(injection_followed=k, injected_episodes=len(injected), injection_rate=round(k / len(injected), 3),
                   injection_ci95=[round(lo, 3), round(hi, 3)])
    return out


def run(family: str, work: Path, *, model: Path | None = None, extra_flags: tuple[str, ...] = (),
        log=print, **overrides) -> dict:
    """Train ``family`` from its cold start and evaluate held-out before and after (module doc).

    Args:
        family: ``math-tool``, ``terminal``, ``gui`` or ``swe``.
        work: a fresh folder for data, checkpoints, logs and the server's store.
        model: the starting policy (default the family's cached cold start).
        extra_flags: more trainer flags (after :data:`RL_FLAGS`, so they override it).
        log: called with one line per step.
        **overrides: ``steps``, ``prompts_per_step``, ``samples_per_prompt``, ``eval_samples``,
            ``max_response_len``, ``max_turns`` (defaults :data:`DEFAULTS`, then the family's
            ``settings`` in :data:`tests.support.track2_tasks.FAMILIES`: swe plays one step).

    Returns:
        ``{"family", "train_tasks", "heldout_tasks", "before", "after"`` (each of
        :func:`_evaluate`), ``"steps"`` (per step: ``reward_mean``, ``pass_rate``,
        ``episode_s``, ``train_s``, ``loss``, ``kl_loss`` (token-mean KL to the reference),
        ``grad_norm``, ``logprob_gap``, ``tool_calls``, ``group_passes``: passes per prompt group),
        ``"wall_s"}``.
    """
    from openclaw_rl.rollout.service import OpenClawRolloutService
    from slime.guards.admission import AdmissionPolicy, admit
    from slime.trainer.backend import TrainingBackend
    from slime.methods.registry import load_method_class
    from slime.plugins.rollout import load_rollout_function, rollout_spec
    from slime.train import check_run
    from tests.support.track2_cold_start import cold_start_path

    o = {**DEFAULTS, **track2_tasks.FAMILIES[family].get("settings", {}), **overrides}
    work = Path(work)
    model = Path(model or cold_start_path(family))
    train_data = track2_tasks.write_rows(family, "train", work / "data" / "train.jsonl")
    held_data = track2_tasks.write_rows(family, "heldout", work / "data" / "heldout.jsonl")
    n_train, n_held = len(track2_tasks.rows(family, "train")), len(track2_tasks.rows(family, "heldout"))
    tools_config = work / "data" / "tools_config.json"
    base_tools = json.loads((REPO / "toolcall-rl" / "tools_config.json").read_text())
    tools_config.write_text(json.dumps({**base_tools, "max_turns": o["max_turns"]}))
    cfg = _config(family, model, work, train_data, o["steps"], o["prompts_per_step"], o["samples_per_prompt"],
                  o["max_response_len"], tuple(extra_flags))
    eval_cfg = cfg.replace(prompt_data=str(held_data), rollout_batch_size=n_held,
                           n_samples_per_prompt=o["eval_samples"])
    t0 = time.time()
    turns = str(o["max_turns"])  # every family's turn-limit variable (gui: GUI_MAX_STEPS, swe: SWE_STEP_LIMIT)
    with _environ(TOOLS_CONFIG=str(tools_config), MAX_STEPS=turns, GUI_MAX_STEPS=turns, SWE_STEP_LIMIT=turns,
                  PARALLEL_ENVS="8"):
        check_run(cfg)
        method = load_method_class(cfg.advantage_estimator)(cfg)
        backend = TrainingBackend(cfg)
        admission = AdmissionPolicy.from_config(cfg, None, True)
        service = OpenClawRolloutService(cfg, None, method)
        rollout_fn = load_rollout_function(rollout_spec(cfg))
        try:
            args = service.rollout_args()
            eval_args = eval_cfg.with_section_values("service", rl_buffer_dir=args.rl_buffer_dir,
                                                     server_url=args.server_url)
            before = _evaluate(rollout_fn, eval_args, n_held)
            log(f"{family} held-out before: {before}")
            steps = []
            for step in range(o["steps"]):
                t1 = time.time()
                groups = _groups(rollout_fn, args, step)
                samples = [s for g in groups for s in g]
                t2 = time.time()
                rewards = [float(s.reward) for s in samples if s.reward is not None]
                passes = _passes(samples)
                admitted, _ = admit(samples, admission, backend)
                admitted, _ = method.compute_advantages(admitted)
                metrics = backend.train_step(admitted)
                version = backend.weight_version
                path = backend.export_weights(Path(cfg.save) / "published" / f"version-{version}")
                service.publish_weights(str(path), version)
                row = {"step": step + 1, "reward_mean": round(statistics.fmean(rewards), 3) if rewards else None,
                       "pass_rate": round(passes / max(1, len(_episode_scores(samples))), 3),
                       "episode_s": round((t2 - t1) / max(1, len(samples)), 3), "train_s": round(time.time() - t2, 2),
                       "loss": round(float(metrics["loss"]), 4),
                       "kl_loss": round(float(metrics.get("kl_loss", 0.0)), 4),
                       "grad_norm": round(float(metrics["grad_norm"]), 3),
                       "logprob_gap": round(float(metrics["train_rollout_logprob_abs_diff"]), 4),
                       "tool_calls": statistics.fmean(s.metadata.get("tool_calls", 0) for s in samples),
                       "group_passes": [_passes(g) for g in groups]}
                steps.append(row)
                log(f"{family} step {row}")
            after = _evaluate(rollout_fn, eval_args, n_held)
            log(f"{family} held-out after: {after}")
        finally:
            service.close()
    return {"family": family, "train_tasks": n_train, "heldout_tasks": n_held, "model": str(model),
            "before": before, "after": after, "steps": steps, "wall_s": round(time.time() - t0, 1)}
