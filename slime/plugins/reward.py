"""Reward plugins (``--custom-rm-path``) in slime's two forms and the simple README form.

The canonical form is slime's per-sample ``reward(args, sample)``, the
:class:`slime.plugins.hooks.RewardFunction` protocol; the **simple** form (the seed's
``get_reward_model``) and slime's **batched** form are adapters to it, chosen from the signature.

* **slime, per sample**: ``async def reward(args, sample, **kwargs) -> float | dict`` (a plain
  ``def`` is run in a worker thread). A dict must hold the reward under ``--reward-key``
  (default ``"reward"``; slime's ``Sample.get_reward_value``); the other keys are kept as details.
* **slime, batched**: ``async def reward(args, samples, **kwargs) -> list[float | dict]``, one
  result per sample in order. Detected by the second parameter's name ``samples`` (or a
  ``list[...]`` annotation).
* **simple**: ``get_reward_model(config)`` returns an object with
  ``score(prompt: str, response: str, next_state: str) -> float``. It is built once per judge
  worker (``--num-judge-workers`` instances, at start-up); each call borrows one instance and runs
  ``score`` in a worker thread. ``config`` is a dict of the run's flags (:func:`reward_config`).

What the simple form's strings hold is up to the caller, which knows where its samples came from
(``RewardPlugin(texts=...)``; the runtime's live judge passes the conversation as the policy saw
it and the user's reply or tool result, which it keeps in the sample's metadata). The
default, :func:`reward_texts`, reads the sample's typed fields only: ``prompt`` (text, or the chat
messages' contents one per line), ``response`` and the ``label`` as ``next_state``.

File specs without a function name look for ``get_reward_model`` (simple), then ``reward``
(slime). Results are finite floats; anything else is a per-sample error naming the plugin.
"""

from __future__ import annotations

import asyncio
import math
import queue
import threading
import typing
from collections.abc import Callable, Sequence
from typing import Any

from slime.plugins.calls import call_async
from slime.errors import error_line, one_line
from slime.trainer.models import resolve_model_path
from slime.plugins.loader import (PluginError, check_parameters, check_return_annotation, load_module,
                           positional_parameters, split_spec)
from slime.record.sample import Sample

__all__ = ["RewardPlugin", "reward_config", "reward_texts"]

FLAG = "--custom-rm-path"
DEFAULT_NAMES = ("get_reward_model", "reward")


def reward_config(args: Any) -> dict[str, Any]:
    """The simple form's ``config``: every flag of the run as a plain dict.

    Core fields and method flags (``extra``) side by side; ``prm_model_path`` defaults to
    ``model_path`` when ``--prm-model-path`` / ``PRM_MODEL_PATH`` is not set. Model names with a
    registered scheme (``builtin:...``, :mod:`slime.trainer.models`) in both are resolved to their local
    Hugging Face folders, so ``from_pretrained(config["prm_model_path"])`` works for them too.
    """
    if args is None:
        return {}
    if hasattr(args, "to_dict"):
        out = args.to_dict()
        out.update(out.pop("extra", {}) or {})
    else:
        out = dict(vars(args))
    if not out.get("prm_model_path"):
        out["prm_model_path"] = out.get("model_path")
    for key in ("model_path", "prm_model_path"):
        if isinstance(out.get(key), str):
            out[key] = resolve_model_path(out[key])
    return out


def reward_texts(sample: Sample) -> tuple[str, str, str]:
    """The simple form's default ``(prompt, response, next_state)`` (module doc): ``sample.prompt``
    (chat messages joined by line), ``sample.response`` and ``sample.label`` (``""`` when None)."""
    p = sample.prompt
    prompt = p if isinstance(p, str) else "\n".join(str(m.get("content") or "") for m in (p or []))
    return str(prompt), str(sample.response or ""), "" if sample.label is None else str(sample.label)


def _is_batched(fn: Callable) -> bool:
    params = positional_parameters(fn)
    if len(params) < 2:
        return False
    if params[1].name in ("samples", "batch"):
        return True
    try:
        hint = typing.get_type_hints(fn).get(params[1].name)
    except Exception:
        return False
    return typing.get_origin(hint) in (list, Sequence, typing.Sequence)


class RewardPlugin:
    """A loaded ``--custom-rm-path`` plugin (see module doc for the forms).

    Args:
        spec: the flag's value.
        args: the run's config (slime's ``args``; :func:`reward_config` for the simple form).
        num_workers: simple form: how many reward models to build (one per judge worker).
        build: simple form: build the models now (False: only check the plugin, e.g. at start-up
            in the driver).
        texts: simple form: the ``(prompt, response, next_state)`` strings of a sample
            (default :func:`reward_texts`).

    Attributes:
        convention: ``"simple"``, ``"slime"`` or ``"slime_batched"``.
        name: ``"--custom-rm-path <spec>"`` for messages.

    Raises:
        PluginError: missing file or function, wrong parameters, a return annotation naming the
            wrong type, or (``build``) ``get_reward_model`` raising or returning an object without
            a callable ``score``.
    """

    def __init__(self, spec: str, args: Any = None, num_workers: int = 1, build: bool = True,
                 texts: Callable[[Sample], tuple[str, str, str]] = reward_texts):
        self.spec, self.args, self.texts = spec, args, texts
        module, func = load_module(spec, FLAG)
        names = [func] if func else list(DEFAULT_NAMES)
        fn = next((getattr(module, n) for n in names if callable(getattr(module, n, None))), None)
        if fn is None:
            wanted = " or ".join(f"{n!r}" for n in names)
            raise PluginError(f"{FLAG} {spec}: no function {wanted} in {getattr(module, '__file__', module)}")
        self.fn = fn
        target, _, is_file = split_spec(spec)
        self.name = f"{FLAG} {spec if func or not is_file else f'{target}:{fn.__name__}'}"
        if fn.__name__ == "get_reward_model" or len(positional_parameters(fn)) == 1:
            check_parameters(fn, self.name, ("config",))
            self.convention = "simple"
        else:
            check_parameters(fn, self.name, ("args", "sample"))
            self.convention = "slime_batched" if _is_batched(fn) else "slime"
            allowed = (list, tuple) if self.convention == "slime_batched" else (int, float, dict)
            check_return_annotation(fn, self.name, allowed, "a list of float | dict" if allowed[0] is list
                                    else "float or dict with 'reward'")
        self._models: queue.Queue = queue.Queue()
        self._built = 0
        self._build_lock = threading.RLock()
        if self.convention == "simple" and build:
            for _ in range(max(1, int(num_workers))):
                self._add_model()

    def _add_model(self) -> None:
        with self._build_lock:
            self._models.put(self._build_model())
            self._built += 1

    def _build_model(self) -> Any:
        try:
            model = self.fn(reward_config(self.args))
        except Exception as exc:
            raise PluginError(f"{self.name}: get_reward_model(config) raised {error_line(exc, None)}") from exc
        if not callable(getattr(model, "score", None)):
            raise PluginError(f"{self.name}: get_reward_model(config) returned {type(model).__name__}; expected an "
                              f"object with score(prompt: str, response: str, next_state: str) -> float")
        return model

    @property
    def num_models(self) -> int:
        """Reward models built so far (simple form; one per judge worker)."""
        return self._built

    @property
    def reward_key(self) -> str:
        """The dict key holding the reward: ``--reward-key`` of the run's args, else ``"reward"``."""
        return getattr(self.args, "reward_key", None) or "reward"

    def _value(self, out: Any) -> tuple[float, dict]:
        key = self.reward_key
        details = dict(out) if isinstance(out, dict) else {}
        value = out.get(key) if isinstance(out, dict) else out
        if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:  # numpy / torch scalars
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            expected = "a finite float" if self.convention == "simple" else f"a finite float or {{{key!r}: float}}"
            if isinstance(out, dict) and key not in out:
                expected += f" (no key {key!r}: set --reward-key)"
            raise ValueError(f"{self.name} returned {one_line(repr(out), 200)}; expected {expected}")
        details.pop(key, None)
        return float(value), details

    async def _call(self, *call_args) -> Any:
        return await call_async(self.fn, *call_args)

    def _ensure_model(self) -> None:
        with self._build_lock:
            if self._built == 0:
                self._add_model()

    def _score_simple(self, sample: Sample) -> Any:
        model = self._models.get()
        try:
            return model.score(*self.texts(sample))
        finally:
            self._models.put(model)

    async def score_one(self, sample: Sample) -> tuple[float, dict]:
        """Reward of one sample: ``(reward, details)``.

        Raises:
            Exception: whatever the plugin raised, or ``ValueError`` for a malformed result.
        """
        if self.convention == "slime_batched":
            return (await self.score_many([sample]))[0]  # type: ignore[return-value]
        if self.convention == "simple":
            if self._built == 0:  # built lazily when the plugin was only checked
                await asyncio.to_thread(self._ensure_model)
            return self._value(await asyncio.to_thread(self._score_simple, sample))
        return self._value(await self._call(self.args, sample))

    async def score_many(self, samples: Sequence[Sample]) -> list[tuple[float, dict] | BaseException]:
        """Rewards of many samples, in order; a failure is returned (not raised) in its slot.

        The batched form gets one call with the whole list (its exception, or a result of the
        wrong length, fails every sample); the other forms score samples concurrently.
        """
        samples = list(samples)
        if self.convention != "slime_batched":
            return list(await asyncio.gather(*(self.score_one(s) for s in samples), return_exceptions=True))
        try:
            out = await self._call(self.args, samples)
            if not isinstance(out, (list, tuple)) or len(out) != len(samples):
                raise ValueError(f"{self.name} returned {type(out).__name__} of length "
                                 f"{len(out) if hasattr(out, '__len__') else '?'} for {len(samples)} samples; "
                                 f"expected a list with one float or dict per sample")
        except Exception as exc:
            return [exc] * len(samples)
        results: list[tuple[float, dict] | BaseException] = []
        for item in out:
            try:
                results.append(self._value(item))
            except ValueError as exc:
                results.append(exc)
        return results
