"""A ``--custom-rm-path`` reward plugin as the live turn judge.

Any form of :class:`slime.plugins.reward.RewardPlugin` works: slime's ``reward(args, sample)``
(per sample or batched on ``samples``) or the simple ``get_reward_model(config)`` whose
``score(prompt, response, next_state)`` is built once per judge worker. The plugin sees the turn
as a :class:`slime.record.sample.Sample`: token-exact ``tokens``, ``prompt`` (the conversation as the
policy saw it, chat template applied), ``response`` (the sampled text) and ``metadata`` with
``prompt_text``, ``response_text``, ``messages``, ``next_state`` and ``next_state_role``.

An exception in the plugin, or a malformed result, fails that turn only: the judge loop stores it
as not trainable with the error and logs the traceback.
"""

from __future__ import annotations

from openclaw_rl.capture.store import TurnRecord
from openclaw_rl.rollout.flags import service_flags
from openclaw_rl.rollout.judge_loop import JudgeResult
from openclaw_rl.rollout.samples import turn_to_sample
from slime.plugins.reward import RewardPlugin, reward_texts


def turn_sample(turn: TurnRecord):
    """The :class:`slime.record.sample.Sample` a reward plugin sees for ``turn`` (see module doc)."""
    sample = turn_to_sample(turn, None, True)
    sample.prompt = turn.prompt_text
    sample.response = turn.response_text or ""
    sample.metadata.update(prompt_text=turn.prompt_text, response_text=turn.response_text,
                           next_state=turn.next_state, messages=turn.messages)
    return sample


def plugin_reward_texts(sample) -> tuple[str, str, str]:
    """The simple reward form's ``(prompt, response, next_state)`` for our samples: ``prompt`` the
    conversation exactly as the policy saw it (chat template applied; ``metadata["prompt_text"]``,
    set by :func:`turn_sample` and :func:`openclaw_rl.rollout.generate.generate`), else
    ``sample.prompt``; ``response`` the sampled text; ``next_state`` the user's reply or the tool
    result that followed a live turn (``metadata["next_state"]``), else, for a prompt-dataset
    sample, its label (``""`` when neither)."""
    md = sample.metadata
    prompt, _, label_text = reward_texts(sample)
    prompt_text, next_state = md.get("prompt_text"), md.get("next_state")
    return (prompt if prompt_text is None else str(prompt_text), str(sample.response or md.get("response_text") or ""),
            label_text if next_state is None else str(next_state))


class CustomRewardJudge:
    """Judge turns with a user reward plugin.

    Args:
        spec: ``--custom-rm-path`` value (``file.py`` -> ``get_reward_model`` or ``reward``,
            ``file.py:fn``, or ``pkg.mod.fn``).
        args: the run's config, passed through as the plugin's ``args`` / ``config``.
        num_workers: judge workers (simple form: one reward model each); default
            ``--num-judge-workers``.

    Raises:
        slime.plugins.loader.PluginError: at start-up, for a missing file/function, wrong parameters, or
            a ``get_reward_model`` that fails.
    """

    method = "custom_rm"

    def __init__(self, spec: str, args, num_workers: int | None = None):
        workers = num_workers if num_workers is not None else service_flags(args).num_judge_workers
        self.plugin = RewardPlugin(spec, args, num_workers=workers, texts=plugin_reward_texts)
        self.args = args
        if self.plugin.convention == "slime_batched":
            self.judge_batch = self._judge_batch  # the judge loop scores claimed turns in one call

    @property
    def name(self) -> str:
        """``--custom-rm-path <spec>``."""
        return self.plugin.name

    async def judge(self, turn: TurnRecord) -> JudgeResult:
        """Score one turn.

        Raises:
            Exception: the plugin's, or ``ValueError`` for a non-finite or malformed reward.
        """
        reward, details = await self.plugin.score_one(turn_sample(turn))
        return JudgeResult(reward, True, details)

    async def _judge_batch(self, turns: list[TurnRecord]) -> list[JudgeResult | BaseException]:
        """Score turns with one call of a batched plugin; failures are returned in their slots."""
        results = await self.plugin.score_many([turn_sample(t) for t in turns])
        return [r if isinstance(r, BaseException) else JudgeResult(r[0], True, r[1]) for r in results]
