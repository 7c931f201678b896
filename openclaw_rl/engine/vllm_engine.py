"""``--backend vllm``: the engine is a vLLM server (its own process and venv, ``make vllm``).

Token in, token out through vLLM's ``POST /inference/v1/generate`` (vLLM >= 0.32, served with
``--enable-scale-out``): the request carries ``token_ids`` and vLLM ``SamplingParams``; each
server-sent event carries the new ``token_ids`` and, per token, ``logprobs.content[i]`` =
``{token_id, logprob, rank, top_logprobs}``; the last one also carries ``weight_versions``
(which weight version sampled which output tokens). A grammar (forced ``tool_choice``) goes as
``structured_outputs.grammar`` to vLLM's llguidance backend. vLLM runs with
``--logprobs-mode processed_logprobs``, so a logprob is that of the distribution the token was
drawn from (after temperature and top-p; the raw log-softmax for greedy), as
:class:`openclaw_rl.engine.base.TokenEvent` defines it.

Weight updates use vLLM's RL endpoints (``VLLM_SERVER_DEV_MODE=1``) on each drained replica:
``POST /pause?mode=wait`` (nothing in flight; the prefix cache is cleared),
``POST /collective_rpc`` ``{"method": "reload_weights", "kwargs": {"weights_path": folder}}``
(every worker reloads in place from the folder), ``POST /update_weight_version``, ``POST /resume``.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from openclaw_rl.engine.base import EngineError, SamplingParams, TokenEvent
from openclaw_rl.engine.remote import RemoteEngine, StreamState


def token_event(entry: dict, top_logprobs: int) -> TokenEvent:
    """One ``logprobs.content`` entry of a generate event as a :class:`TokenEvent`: the sampled
    id and logprob, and the ``top_logprobs`` best alternatives (vLLM lists the sampled token first,
    then the top ranks, ``top_logprobs + 1`` entries in all as requested; ranks start at 1)."""
    top: tuple[tuple[int, float], ...] = ()
    if top_logprobs:
        seen: dict[int, tuple[int, float]] = {}
        for alt in entry.get("top_logprobs") or []:
            rank = alt.get("rank")
            if rank is not None and rank <= top_logprobs:
                seen.setdefault(int(alt["token_id"]), (int(rank), float(alt["logprob"])))
        top = tuple((tid, lp) for tid, (_, lp) in sorted(seen.items(), key=lambda kv: kv[1][0]))
    return TokenEvent(int(entry["token_id"]), float(entry["logprob"]), top)


class VLLMEngine(RemoteEngine):
    """:class:`RemoteEngine` on vLLM servers (see the module doc).

    Args:
        urls: the replicas' base URLs (servers started with ``VLLM_SERVER_DEV_MODE=1``,
            ``--enable-scale-out``, ``--logprobs-mode processed_logprobs``, ``--max-logprobs 21``
            and ``--structured-outputs-config.backend guidance``, as
            :mod:`openclaw_rl.engine.engine_servers` starts them).
        model_folder: the served model's folder.
        max_context: context window; default vLLM's ``max_model_len``.
    """

    backend = "vllm"
    server_name = "vLLM"
    #: forced tool calls: the llguidance Lark grammar goes to vLLM's ``guidance`` structured-output
    #: backend (``--structured-outputs-config.backend guidance``), which masks the logits before
    #: sampling, so the logprobs are those of the constrained distribution
    supports_grammar = True

    def _start_version(self, client: httpx.Client, url: str) -> int:
        resp = client.get(f"{url}/weight_info")
        if resp.status_code == 404:
            raise EngineError(f"vLLM server {url} has no weight-update endpoints: start it with VLLM_SERVER_DEV_MODE=1")
        name = str(self.check(resp, "weight_info").json().get("weight_version"))
        if name.isdigit():  # already labelled by us (a restarted intercept server): keep its version
            return int(name)
        self.check(client.post(f"{url}/update_weight_version", json={"new_version": "0"}), "update_weight_version")
        return 0

    def _request(self, prompt_ids: list[int], params: SamplingParams, max_tokens: int,
                 stop_ids: list[int]) -> tuple[str, dict]:
        sampling = {"max_tokens": max_tokens, "temperature": params.temperature, "top_p": params.top_p,
                    "stop_token_ids": stop_ids, "detokenize": False,
                    # vLLM lists the sampled token first and cuts the list at ``logprobs`` entries:
                    # one more keeps ``top_logprobs`` true alternatives when the sampled one is not among them
                    "logprobs": params.top_logprobs + 1 if params.top_logprobs else 0}
        if params.seed is not None:
            sampling["seed"] = params.seed % 2 ** 63
        if params.grammar is not None:
            sampling["structured_outputs"] = {"grammar": params.grammar}
        return "/inference/v1/generate", {"token_ids": prompt_ids, "sampling_params": sampling, "stream": True}

    def _events(self, chunk: dict, state: StreamState) -> list[TokenEvent]:
        if "error" in chunk:
            raise EngineError(f"vLLM: {chunk['error'].get('message', chunk['error'])}")
        try:
            choice = chunk["choices"][0]
            ids = choice.get("token_ids") or []
            entries = (choice.get("logprobs") or {}).get("content") or []
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise EngineError(f"vLLM sent an event without choices[0]: {str(chunk)[:200]}") from exc
        if len(entries) != len(ids):
            raise EngineError(f"vLLM sent {len(ids)} token ids with {len(entries)} logprobs")
        events = [token_event(e, state.top_logprobs) for e in entries]
        if any(ev.token_id != int(i) for ev, i in zip(events, ids)):
            raise EngineError("vLLM's token ids and logprob entries disagree")
        for span in choice.get("weight_versions") or []:
            state.versions.append(str(span["version"]))
        if choice.get("finish_reason") is not None:
            state.finish_reason = choice["finish_reason"]
        return events

    def _reload(self, client: httpx.Client, url: str, folder: Path, version: int) -> None:
        self.check(client.post(f"{url}/pause", params={"mode": "wait"}), "pause")
        try:
            self.check(client.post(f"{url}/collective_rpc",
                               json={"method": "reload_weights", "kwargs": {"weights_path": str(folder)}}),
                   "reload_weights")
            self.check(client.post(f"{url}/update_weight_version", json={"new_version": str(version)}),
                   "update_weight_version")
        finally:
            self.check(client.post(f"{url}/resume"), "resume")
