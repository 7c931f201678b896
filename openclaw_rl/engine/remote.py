"""What the vLLM and SGLang engines share: an :class:`Engine` on engine servers over HTTP.

The engine server (vLLM or SGLang, in its own process and environment) only samples: the
intercept server sends it the exact prompt ids and receives the sampled ids with their logprobs,
token by token (server-sent events), so capture stays token-exact; chat templates, stop strings,
tool parsing and capture all stay in the intercept server. A backend (:mod:`vllm_engine`,
:mod:`sglang_engine`) says how to phrase one request and read one event, and how to reload
weights; this class does the rest:

* replicas and session affinity (:class:`openclaw_rl.engine.replicas.ReplicaSet`, keyed by
  :attr:`SamplingParams.affinity_key`);
* streaming with abort (closing the iterator closes the HTTP stream, which aborts the request in
  the engine server);
* weight updates: the new weights are checked first (:mod:`openclaw_rl.engine.weight_folder`),
  then each replica in turn is drained, reloaded and given back (a rolling update: the others
  keep serving), so every completion runs on one weight version; the engine's own per-token
  weight-version report is checked against it.
"""

from __future__ import annotations

import abc
import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Mapping, Sequence

import httpx

from openclaw_rl.engine.base import (Engine, EngineError, GenerationOutput, check_prompt,
                                     SamplingParams, TokenEvent)
from openclaw_rl.engine.replicas import Replica, ReplicaSet
from openclaw_rl.engine.weight_folder import engine_weights_folder
from openclaw_rl.models import load_tokenizer
from openclaw_rl.tls import tls_context

log = logging.getLogger(__name__)

#: seconds to connect to an engine server; reading a stream has no limit (long completions)
CONNECT_TIMEOUT = 10.0


@dataclass
class StreamState:
    """What a backend has read of one streamed completion so far.

    Attributes:
        finish_reason: the engine's finish reason once the last event came (``stop``,
            ``length``, ``abort``), else None.
        versions: the weight versions the engine reported for the completion's tokens.
        seen: tokens read so far.
        top_logprobs: alternatives asked for per position (:attr:`SamplingParams.top_logprobs`).
    """

    finish_reason: str | None = None
    versions: list[str] = field(default_factory=list)
    seen: int = 0
    top_logprobs: int = 0


def eos_token_ids(model_folder: Path, vocab_size: int | None = None) -> frozenset[int]:
    """The ids that end a completion for the model in ``model_folder``: the generation config's
    EOS, the tokenizer's EOS, ``<|im_end|>`` and ``<|endoftext|>`` (as the transformers engine
    stops)."""
    from transformers import GenerationConfig

    ids: list[int] = []
    try:
        eos = GenerationConfig.from_pretrained(model_folder).eos_token_id
        ids += [eos] if isinstance(eos, int) else list(eos or [])
    except OSError:  # no generation_config.json
        pass
    tok = load_tokenizer(model_folder)  # shared in this process (the server's too): only read
    unk = tok.unk_token_id
    for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")):
        if isinstance(i, int) and i != unk:
            ids.append(i)
    return frozenset(i for i in ids if i is not None and i >= 0 and (vocab_size is None or i < vocab_size))


class RemoteEngine(Engine):
    """:class:`Engine` on one or more engine servers (see the module doc).

    Args:
        urls: base URLs of the replicas (``http://host:port``), at least one.
        model_folder: the served model's folder (tokenizer, config, base weights).
        max_context: context window; default (and at most) the engine server's.

    Raises:
        EngineError: a replica does not answer or serves another context window.
    """

    #: the ``--backend`` name
    backend = "remote"
    #: the engine server's name in messages
    server_name = "engine"

    def __init__(self, urls: Sequence[str], model_folder: str | Path, max_context: int | None = None):
        self.model_folder = Path(model_folder)
        self.replicas = ReplicaSet([Replica(u.rstrip("/")) for u in urls])
        with httpx.Client(timeout=httpx.Timeout(60.0, connect=CONNECT_TIMEOUT), verify=tls_context()) as client:
            windows = {r.url: self._context_window(client, r.url) for r in self.replicas.replicas}
            for replica in self.replicas.replicas:
                replica.version = self._start_version(client, replica.url)
        if len(set(windows.values())) != 1:
            raise EngineError(f"the {self.backend} replicas serve different context windows: {windows}")
        window = next(iter(windows.values()))
        self.max_context = min(int(max_context), window) if max_context else window
        self.eos_token_ids = eos_token_ids(self.model_folder)
        self._version = max(r.version for r in self.replicas.replicas)
        self._update_lock = threading.Lock()
        self._client: httpx.AsyncClient | None = None
        self._client_loop = None
        self._closed = False
        self._merged: Path | None = None  # the last folder written for an update (removed after the next)
        #: engine servers started for this engine (:mod:`openclaw_rl.engine.engine_servers`),
        #: stopped by :meth:`aclose`
        self.servers: list = []

    def check(self, resp: httpx.Response, what: str) -> httpx.Response:
        """``resp`` when it is a 200; else raises :class:`EngineError` naming the server and ``what``."""
        if resp.status_code != 200:
            raise EngineError(f"{self.server_name} {what} answered {resp.status_code}: {resp.text[:500]}")
        return resp

    # ------------------------------------------------------------------ backend hooks
    def _context_window(self, client: httpx.Client, url: str) -> int:
        """The replica's context window in tokens (blocking, at start): ``max_model_len`` of its
        OpenAI ``/v1/models`` listing (vLLM and SGLang both report it).

        Raises:
            EngineError: the server does not answer or answers with an error.
        """
        try:
            models = self.check(client.get(f"{url}/v1/models"), f"{url}/v1/models").json()["data"]
        except httpx.HTTPError as exc:
            raise EngineError(f"{self.server_name} server {url} does not answer: {exc}") from exc
        return int(models[0]["max_model_len"])

    @abc.abstractmethod
    def _start_version(self, client: httpx.Client, url: str) -> int:
        """The weight version the replica serves at start (blocking); makes the engine server
        report it from now on."""

    @abc.abstractmethod
    def _request(self, prompt_ids: list[int], params: SamplingParams, max_tokens: int,
                 stop_ids: list[int]) -> tuple[str, dict]:
        """``(path, JSON body)`` of one streamed completion request."""

    @abc.abstractmethod
    def _events(self, chunk: dict, state: StreamState) -> list[TokenEvent]:
        """The tokens one server-sent event adds (and its finish reason / versions into
        ``state``).

        Raises:
            EngineError: the event is an error or not understood.
        """

    @abc.abstractmethod
    def _reload(self, client: httpx.Client, url: str, folder: Path, version: int) -> None:
        """Blocking: make the (drained) replica at ``url`` serve the weights in ``folder``
        labelled ``version``.

        Raises:
            EngineError: the engine server refused or failed.
        """

    # ------------------------------------------------------------------ interface
    @property
    def weight_version(self) -> int:
        return self._version

    def describe(self) -> dict:
        """The backend and its replicas (URL, weight version, completions in flight, whether it
        is being updated), as ``/healthz`` reports them."""
        return {"backend": self.backend,
                "replicas": [{"url": r.url, "weight_version": r.version, "in_flight": r.in_flight,
                              "updating": r.draining} for r in self.replicas.replicas]}

    def _http(self) -> httpx.AsyncClient:
        import asyncio

        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT),
                                             limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
            self._client_loop = loop
        return self._client

    async def generate_stream(self, prompt_ids: Sequence[int], params: SamplingParams,
                              result: GenerationOutput | None = None) -> AsyncIterator[TokenEvent]:
        prompt = check_prompt(prompt_ids, self.max_context, self._closed)
        if params.grammar is not None and not self.supports_grammar:
            raise EngineError(f"the {self.backend} backend does not take grammars (constrained decoding)")
        result = result if result is not None else GenerationOutput(prompt_ids=prompt)
        result.prompt_ids = prompt
        max_tokens = max(1, min(params.max_new_tokens, self.max_context - len(prompt)))
        stop_ids = sorted(self.eos_token_ids | frozenset(params.stop_token_ids))
        path, body = self._request(prompt, params, max_tokens, stop_ids)
        replica = await self.replicas.acquire(params.affinity_key)
        result.weight_version = replica.version
        state = StreamState(top_logprobs=params.top_logprobs)
        finished = False
        try:
            async with self._http().stream("POST", replica.url + path, json=body) as resp:
                if resp.status_code != 200:
                    text = (await resp.aread()).decode(errors="replace")[:500]
                    raise EngineError(f"{self.backend} server {replica.url} answered {resp.status_code}: {text}")
                async for line in resp.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    try:
                        chunk = json.loads(data)
                    except json.JSONDecodeError as exc:
                        raise EngineError(f"{self.backend} server sent an event that is not JSON: {data[:200]}") from exc
                    for event in self._events(chunk, state):
                        result.token_ids.append(event.token_id)
                        result.logprobs.append(event.logprob)
                        result.top_logprobs.append(list(event.top_logprobs))
                        yield event
                    if state.finish_reason is not None:
                        break
            result.finish_reason = _finish_reason(state.finish_reason, result.token_ids, stop_ids, max_tokens)
            self._check_versions(state, replica, result)
            finished = True
        except httpx.HTTPError as exc:
            raise EngineError(f"{self.backend} server {replica.url} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            self.replicas.release(replica)
            if not finished:
                result.finish_reason = "abort"

    def _check_versions(self, state: StreamState, replica: Replica, result: GenerationOutput) -> None:
        """The engine's per-token weight-version report must name one version, ours.

        Raises:
            EngineError: the completion's tokens came from more than one weight version.
        """
        names = sorted(set(state.versions))
        if len(names) > 1:
            raise EngineError(f"{self.backend} server {replica.url} sampled this completion with weight versions "
                              f"{names}: it cannot be recorded as one version")
        if names and names[0] != str(replica.version):
            log.warning("%s server %s reports weight version %r, expected %d", self.backend, replica.url,
                        names[0], replica.version)
            if names[0].isdigit():
                result.weight_version = int(names[0])

    def load_weights(self, source: str | Mapping[str, object], version: int | None = None,
                     allow_older: bool = False) -> int:
        with self._update_lock:
            if version is not None and int(version) < self._version and not allow_older:
                raise ValueError(f"weight version {version} is older than the served version {self._version}")
            folder = engine_weights_folder(source, self.model_folder)
            new_version = self._version + 1 if version is None else int(version)
            with httpx.Client(timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT), verify=tls_context()) as client:
                for replica in self.replicas.replicas:  # one at a time: the others keep serving
                    with self.replicas.drained(replica):
                        self._reload(client, replica.url, folder, new_version)
                        replica.version = new_version
                    log.info("%s replica %s serves weight version %d", self.backend, replica.url, new_version)
            self._version = new_version
            if self._merged is not None and self._merged != folder:
                import shutil
                shutil.rmtree(self._merged, ignore_errors=True)
            self._merged = folder if folder != Path(str(source)) else None
            return new_version

    async def aclose(self) -> None:
        import asyncio

        from openclaw_rl.engine.engine_servers import stop_engine_servers

        self._closed = True
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self.servers:
            servers, self.servers = self.servers, []
            await asyncio.to_thread(stop_engine_servers, servers)


def _finish_reason(engine_reason: str | None, token_ids: list[int], stop_ids: list[int], max_tokens: int) -> str:
    """Our finish reason (``stop`` / ``length``) from the engine's and the tokens themselves."""
    if token_ids and token_ids[-1] in stop_ids:
        return "stop"
    if engine_reason in ("stop", "length"):
        return engine_reason
    if len(token_ids) >= max_tokens:
        return "length"
    raise EngineError(f"the engine ended the completion after {len(token_ids)} tokens "
                      f"(finish reason {engine_reason!r})")
