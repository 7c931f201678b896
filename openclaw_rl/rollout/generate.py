"""The default generate hook: one chat completion through the intercept server, read back
token-exactly from the trajectory store (slime's ``generate(args, sample, sampling_params)``).

The request goes to ``POST {server_url}/v1/chat/completions`` as a fresh session
(``X-Session-Id: generate:<uuid>``), marked ``X-Turn-Type: side`` so the live judges and the live
rollout never pick it up, and ``X-Session-Done: true``. The server commits the turn before its
response ends, so the sample is then built from the stored turn: the exact prompt ids the engine
consumed, the sampled ids, their sampling log-probs and the weight version
(docs/architecture.md, invariant 1; nothing is re-tokenized). A custom ``--custom-generate-function-path`` may call this function,
e.g. after rewriting ``sample.prompt``.

``args`` must provide ``server_url`` (base URL, with or without ``/v1``) and ``rl_buffer_dir``
(the server's store), as the rollout manager's args do; ``api_key`` when the server has one.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import httpx

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.tls import tls_context
from slime.errors import one_line
from slime.record.sample import LogprobSource, Sample, SampleStatus

__all__ = ["chat_request", "generate", "sample_from_turn"]

_STORES: dict[str, TrajectoryStore] = {}
_LOCK = threading.Lock()


def _store(path: str) -> TrajectoryStore:
    with _LOCK:
        if path not in _STORES:
            _STORES[path] = TrajectoryStore(path)
        return _STORES[path]


def _arg(args: Any, name: str) -> Any:
    return getattr(args, name, None)  # a SlimeConfig answers for its sections' flags too


def chat_request(sample: Sample, sampling_params: dict) -> dict:
    """The chat-completions body for ``sample.prompt`` (text becomes one user message).

    Raises:
        ValueError: ``sample.prompt`` is neither a string nor a list of messages.
    """
    prompt = sample.prompt
    if isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt):
        messages = prompt
    else:
        raise ValueError(f"sample.prompt must be text or a list of chat messages, got {type(prompt).__name__}")
    body: dict = {"messages": messages}
    if sampling_params.get("max_new_tokens") is not None:
        body["max_tokens"] = int(sampling_params["max_new_tokens"])
    for key in ("temperature", "top_p", "seed"):
        if sampling_params.get(key) is not None:
            body[key] = sampling_params[key]
    if sampling_params.get("stop"):
        body["stop"] = sampling_params["stop"]
    return body


def sample_from_turn(sample: Sample, turn) -> Sample:
    """Fill ``sample`` from a stored turn (ids, log-probs, version, text); returns it.

    Raises:
        RuntimeError: the turn has no token ids.
    """
    if not turn.prompt_ids:
        raise RuntimeError(f"turn {turn.turn_uid} was recorded without token ids")
    n = len(turn.response_ids)
    sample.tokens = list(turn.prompt_ids) + list(turn.response_ids)
    sample.response_length = n
    sample.rollout_log_probs = [float(x) for x in turn.response_logprobs]
    sample.sampling_temperature, sample.sampling_top_p = turn.temperature, turn.top_p
    sample.logprob_source = LogprobSource.CONSTRAINED if turn.constrained else LogprobSource.ENGINE
    sample.loss_mask = [1] * n
    sample.weight_version = int(turn.weight_version)
    sample.session_id, sample.turn_id = turn.session_id, turn.turn_uid
    sample.response = turn.response_text or ""
    sample.status = SampleStatus.TRUNCATED if turn.finish_reason == "length" else SampleStatus.COMPLETED
    sample.metadata.update(prompt_text=turn.prompt_text, temperature=turn.temperature,
                           generate_turn_id=turn.id, finish_reason=turn.finish_reason)
    sample.validate()
    return sample


async def generate(args: Any, sample: Sample, sampling_params: dict) -> Sample:
    """Generate ``sample``'s response through the intercept server (see module doc).

    Args:
        args: the run's args (``server_url``, ``rl_buffer_dir``, ``api_key``).
        sample: ``prompt`` set (text or messages); filled in place.
        sampling_params: ``temperature``, ``top_p``, ``max_new_tokens``, ``stop`` (optional ``seed``).

    Returns:
        The same sample with ``tokens`` = prompt ids + sampled ids, ``response_length``,
        ``rollout_log_probs``, ``sampling_temperature`` / ``sampling_top_p``, ``weight_version``,
        ``response`` and ``status``.

    Raises:
        RuntimeError: no server (offline runs cannot generate), a non-200 answer, or no recorded turn.
    """
    url = _arg(args, "server_url")
    buffer_dir = _arg(args, "rl_buffer_dir")
    if not url or not buffer_dir:
        raise RuntimeError("the default generate needs a running intercept server and its store "
                           "(args.server_url, args.rl_buffer_dir); offline runs (--data-path) cannot generate")
    base = str(url).rstrip("/").removesuffix("/v1")
    session = f"generate:{uuid.uuid4().hex}"
    headers = {"X-Session-Id": session, "X-Turn-Type": "side", "X-Session-Done": "true"}
    if _arg(args, "api_key"):
        headers["Authorization"] = f"Bearer {_arg(args, 'api_key')}"
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=30.0), verify=tls_context()) as client:
        r = await client.post(f"{base}/v1/chat/completions", json=chat_request(sample, sampling_params),
                              headers=headers)
    if r.status_code != 200:
        raise RuntimeError(f"intercept server answered {r.status_code}: {one_line(r.text, 300)}")
    turns = await asyncio.to_thread(_store(str(buffer_dir)).turns, session)
    if not turns:
        raise RuntimeError(f"the server at {base} recorded no turn for session {session} in {buffer_dir} "
                           "(is --rl-buffer-dir the server's buffer?)")
    return sample_from_turn(sample, turns[-1])
