"""The prompt-dataset rollout: generate responses to dataset prompts, then reward them.

slime's default rollout (THUDM/slime ``slime/rollout/sglang_rollout.py`` ``generate_rollout``) on
our serving stack, used when ``--prompt-data`` is given. Live conversations remain the default
rollout; this one exists for the ``--custom-generate-function-path`` hook and for prompt-set
training (a GRPO group per prompt).

Per step ``rollout_id``: prompts ``rollout_id * B ... rollout_id * B + B - 1`` (cyclic, so a
resumed run continues where it stopped) of ``--prompt-data``, ``B = --rollout-batch-size``; each
prompt gets ``--n-samples-per-prompt`` samples, all generated concurrently by the generate hook
(default :func:`openclaw_rl.rollout.generate.generate`, through the intercept server), then
scored by the ``--custom-rm-path`` plugin (any of its forms; the simple form sees the label as
``next_state``). Each sample's ``metadata`` starts as a copy of its row's ``--metadata-key`` object
(task_key, env_type, ...), with ``rollout_id``, ``group_index`` and ``index`` set over it. A
generate plugin written for upstream, which keeps an agent step-sample's trajectory in
``metadata``, has it lifted into ``Sample.trajectory``
(:func:`openclaw_rl.agentic.trajectory.lift_upstream_trajectory`).

A generate or reward plugin that raises marks that sample failed (traceback in the log, reward 0,
never trained; see :func:`slime.plugins.failures.mark_failed`) and the step goes on; more than
``--max-plugin-failure-fraction`` failed samples in a step stop the run
(:class:`slime.plugins.failures.PluginFailureError`).
"""

from __future__ import annotations

import asyncio
import copy
import statistics
import threading
from typing import Any

from openclaw_rl.agentic.metrics import episode_metrics
from openclaw_rl.agentic.trajectory import lift_upstream_trajectory
from openclaw_rl.rollout.custom_rm import plugin_reward_texts
from openclaw_rl.rollout.flags import service_flags
from slime.plugins.failures import FailureBudget, mark_failed
from slime.record.prompt_data import load_prompts
from slime.plugins.reward import RewardPlugin
from slime.plugins.rollout import GENERATE_FLAG, call_generate, load_generate_function
from slime.record.sample import Sample, SampleStatus

__all__ = ["DEFAULT_GENERATE", "generate_rollout", "load_prompts", "sampling_params"]

#: the default generate hook: one chat completion through the intercept server
DEFAULT_GENERATE = "openclaw_rl.rollout.generate.generate"

_CACHE: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _cached(key: tuple, build):
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = build()
        return _CACHE[key]


def sampling_params(args: Any) -> dict:
    """slime-style sampling params of a run: ``temperature`` (``--rollout-temperature``),
    ``top_p`` 1.0, ``max_new_tokens`` (``--rollout-max-response-len``), ``stop`` None."""
    return {"temperature": float(args.rollout_temperature), "top_p": 1.0,
            "max_new_tokens": int(args.rollout_max_response_len), "stop": None}


async def _generate_group(fn, name: str, args, item: dict, group: int, n: int, rollout_id: int) -> list[Sample]:
    async def one(k: int) -> list[Sample]:
        sample = Sample(tokens=[], response_length=0, rollout_log_probs=[], prompt=copy.deepcopy(item["prompt"]),
                        label=item["label"], metadata={**copy.deepcopy(item.get("metadata") or {}),
                                                       "rollout_id": rollout_id, "group_index": group,
                                                       "index": group * n + k})
        try:
            return [lift_upstream_trajectory(s) for s in await call_generate(fn, name, args, sample, sampling_params(args))]
        except Exception as exc:
            return [mark_failed(sample, name, exc, f"{group * n + k} (prompt {group})")]

    parts = await asyncio.gather(*(one(k) for k in range(n)))
    return [s for part in parts for s in part]


async def _rollout(args, rollout_id: int, items: list[dict], gen_fn, gen_name: str,
                   reward: RewardPlugin) -> list[list[Sample]]:
    n = int(args.n_samples_per_prompt)
    groups = await asyncio.gather(*(_generate_group(gen_fn, gen_name, args, item, g, n, rollout_id)
                                    for g, item in enumerate(items)))
    todo = [s for g in groups for s in g if s.status != SampleStatus.FAILED]
    for s, res in zip(todo, await reward.score_many(todo)):
        if isinstance(res, BaseException):
            mark_failed(s, reward.name, res, str(s.metadata.get("index", "?")))
        else:
            s.reward = res[0]
            if res[1]:
                s.metadata["reward_details"] = res[1]
    return list(groups)


def generate_rollout(args, rollout_id: int, data_source=None, evaluation: bool = False):
    """One step of prompt-dataset rollouts (slime's ``generate_rollout`` convention).

    Args:
        args: the run's config (``prompt_data``, ``input_key``, ``label_key``, ``metadata_key``,
            ``rollout_batch_size``, ``n_samples_per_prompt``, ``custom_generate_function_path``,
            ``custom_rm_path``, ``max_plugin_failure_fraction``; ``server_url`` / ``rl_buffer_dir``
            for the default generate).
        rollout_id: the step index (selects the prompts).
        data_source: unused (the prompts come from ``--prompt-data``).
        evaluation: not supported.

    Returns:
        ``(groups, metrics)``: one group of ``n_samples_per_prompt`` (or more, when generate returns
        several) samples per prompt; failed samples stay in their group with status ``failed``.
        Metrics: ``reward/mean`` (over successful samples), ``rollout/samples``,
        ``rollout/failed``, ``rollout/response_len_mean``, and for agent episodes the ``agent/*``
        metrics of :func:`openclaw_rl.agentic.metrics.episode_metrics`.

    Raises:
        ValueError: ``evaluation=True``, no ``--custom-rm-path``, or a bad prompt file.
        slime.plugins.loader.PluginError: a generate or reward plugin that does not load.
        slime.plugins.failures.PluginFailureError: too many failed samples in this step.
    """
    if evaluation:
        raise ValueError("the prompt-dataset rollout has no evaluation mode")
    if not args.custom_rm_path:
        raise ValueError("--prompt-data needs a reward: give --custom-rm-path")
    meta_key = getattr(args, "metadata_key", "metadata")
    items = _cached(("prompts", args.prompt_data, args.input_key, args.label_key, meta_key),
                    lambda: load_prompts(args.prompt_data, args.input_key, args.label_key, meta_key))
    B = int(args.rollout_batch_size)
    picked = [items[(rollout_id * B + i) % len(items)] for i in range(B)]
    gen_spec = args.custom_generate_function_path
    gen_fn = _cached(("generate", gen_spec), lambda: load_generate_function(gen_spec or DEFAULT_GENERATE))
    gen_name = f"{GENERATE_FLAG} {gen_spec}" if gen_spec else "the default generate"
    workers = service_flags(args).num_judge_workers
    reward = _cached(("reward", args.custom_rm_path, id(args)),
                     lambda: RewardPlugin(args.custom_rm_path, args, num_workers=workers,
                                          texts=plugin_reward_texts))
    groups = asyncio.run(_rollout(args, rollout_id, picked, gen_fn, gen_name, reward))
    samples = [s for g in groups for s in g]
    budget = FailureBudget(args.max_plugin_failure_fraction, "the generate / reward plugins")
    for s in samples:
        budget.record(s.status == SampleStatus.FAILED, s.metadata.get("error"))
    budget.check(end_of_step=True)
    ok = [s for s in samples if s.status != SampleStatus.FAILED]
    metrics = {"reward/mean": statistics.fmean([float(s.reward) for s in ok]) if ok else 0.0,
               "rollout/samples": len(samples), "rollout/failed": len(samples) - len(ok),
               "rollout/response_len_mean": statistics.fmean([s.response_length for s in ok]) if ok else 0.0,
               **episode_metrics(samples)}
    return groups, metrics
