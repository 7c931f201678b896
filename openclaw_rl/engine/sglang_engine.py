"""``--backend sglang``: the engine is an SGLang server (its own process and environment).

Token in, token out through SGLang's native ``POST /generate``: ``input_ids``, ``sampling_params``,
``return_logprob`` and ``top_logprobs_num``, streamed. Each event's ``meta_info`` carries
``output_token_logprobs`` (``[logprob, token_id, text]`` per token), ``output_top_logprobs``,
``completion_tokens``, ``finish_reason`` (``{"type": "stop" | "length" | "abort", ...}``) and
``weight_version``. By default SGLang streams the whole output so far in every event
(``--incremental-streaming-output`` sends only the new part); the last ``completion_tokens -
seen`` entries are the new tokens in both cases.

Weight updates: ``POST /update_weights_from_disk`` ``{"model_path", "weight_version",
"flush_cache": true}`` on each drained replica (SGLang's own endpoint; it also waits for requests
in flight, and flushes the prefix cache).

Not run here: SGLang has no CPU build, so this backend is checked against SGLang's documented
request and event shapes only (tests/test_sglang_engine.py); its real test needs a GPU.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from openclaw_rl.engine.base import EngineError, SamplingParams, TokenEvent
from openclaw_rl.engine.remote import RemoteEngine, StreamState


class SGLangEngine(RemoteEngine):
    """:class:`RemoteEngine` on SGLang servers (see the module doc).

    Args:
        urls: the replicas' base URLs.
        model_folder: the served model's folder.
        max_context: context window; default SGLang's ``max_model_len``.
    """

    backend = "sglang"
    server_name = "SGLang"

    def _start_version(self, client: httpx.Client, url: str) -> int:
        resp = client.get(f"{url}/get_weight_version")
        name = str(self.check(resp, "get_weight_version").json().get("weight_version")) if resp.status_code != 404 else ""
        if name.isdigit():
            return int(name)
        self.check(client.post(f"{url}/update_weight_version", json={"new_version": "0"}), "update_weight_version")
        return 0

    def _request(self, prompt_ids: list[int], params: SamplingParams, max_tokens: int,
                 stop_ids: list[int]) -> tuple[str, dict]:
        sampling = {"max_new_tokens": max_tokens, "temperature": params.temperature, "top_p": params.top_p,
                    "stop_token_ids": stop_ids, "skip_special_tokens": False, "no_stop_trim": True}
        if params.seed is not None:
            sampling["sampling_seed"] = params.seed % 2 ** 63
        body = {"input_ids": prompt_ids, "sampling_params": sampling, "return_logprob": True,
                "top_logprobs_num": params.top_logprobs, "logprob_start_len": -1, "stream": True}
        return "/generate", body

    def _events(self, chunk: dict, state: StreamState) -> list[TokenEvent]:
        if "error" in chunk:
            error = chunk["error"]
            raise EngineError(f"SGLang: {error.get('message', error) if isinstance(error, dict) else error}")
        meta = chunk.get("meta_info")
        if not isinstance(meta, dict) or "completion_tokens" not in meta:
            raise EngineError(f"SGLang sent an event without meta_info.completion_tokens: {str(chunk)[:200]}")
        new = int(meta["completion_tokens"]) - state.seen
        entries = meta.get("output_token_logprobs") or []
        tops = meta.get("output_top_logprobs") or []
        if new < 0 or len(entries) < new:
            raise EngineError(f"SGLang reported {meta['completion_tokens']} tokens with {len(entries)} logprobs")
        events = []
        for i in range(len(entries) - new, len(entries)):
            logprob, token_id = entries[i][0], entries[i][1]
            alts: tuple[tuple[int, float], ...] = ()
            if state.top_logprobs and i < len(tops) and tops[i]:
                alts = tuple((int(t[1]), float(t[0])) for t in tops[i][:state.top_logprobs])
            events.append(TokenEvent(int(token_id), float(logprob), alts))
        state.seen += new
        if meta.get("weight_version") is not None:
            state.versions.append(str(meta["weight_version"]))  # the label when this event was sampled
        reason = meta.get("finish_reason")
        if reason is not None:
            state.finish_reason = reason.get("type") if isinstance(reason, dict) else str(reason)
        return events

    def _reload(self, client: httpx.Client, url: str, folder: Path, version: int) -> None:
        body = {"model_path": str(folder), "weight_version": str(version), "flush_cache": True}
        result = self.check(client.post(f"{url}/update_weights_from_disk", json=body), "update_weights_from_disk").json()
        if not result.get("success", False):
            raise EngineError(f"SGLang could not load {folder}: {result.get('message')}")
