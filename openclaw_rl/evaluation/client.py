"""The evaluation's client of an OpenAI-compatible server: every request is a side turn.

Each request carries ``X-Turn-Type: side`` (evaluation traffic is never trained on, see the
README's "What is recorded"), its own ``X-Session-Id`` (``eval-<run>-<task>-<item>``) and
``X-Session-Done: true``, so a training server records it as a finished side session. Sampling is
reproducible: ``temperature`` (0 = greedy) and a per-item ``seed`` derived from the run's seed and
the item id, so results do not depend on the order or concurrency of requests.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass


def item_seed(seed: int, item_id: str) -> int:
    """A request seed for ``item_id``: ``seed`` plus the CRC-32 of the id, modulo 2**31."""
    return (seed + zlib.crc32(item_id.encode("utf-8"))) % (2 ** 31)


@dataclass
class EvalClient:
    """Chat completions against ``base_url`` (``http://host:port/v1``) as side turns.

    ``model``: the name sent in requests (default: the first id of ``/v1/models``).
    ``model_path``: the served policy's model path (a folder or ``builtin:`` name) when this process
    started the server, else None; an agent family's task setup reads it (a vision-language policy
    gets the GUI screenshots as images).
    """

    base_url: str
    api_key: str | None = None
    run_id: str = "run"
    temperature: float = 0.0
    seed: int = 0
    timeout: float = 900.0
    model: str | None = None
    model_path: str | None = None

    def __post_init__(self):
        import openai

        self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "none",
                                     timeout=self.timeout, max_retries=2)
        if self.model is None:
            self.model = self._client.models.list().data[0].id

    def chat(self, task: str, item_id: str, messages: list[dict], *, max_tokens: int, tools: list | None = None):
        """One non-streamed chat completion for ``item_id`` of ``task``.

        Returns:
            The ``openai`` ``ChatCompletion``.

        Raises:
            openai.APIStatusError: the server refused the request (4xx/5xx).
            openai.APIConnectionError / APITimeoutError: after the SDK's retries.
        """
        headers = {"X-Turn-Type": "side", "X-Session-Id": f"eval-{self.run_id}-{task}-{item_id}",
                   "X-Session-Done": "true"}
        kwargs = {"tools": tools} if tools else {}
        return self._client.chat.completions.create(
            model=self.model, messages=messages, max_tokens=max_tokens, temperature=self.temperature,
            seed=item_seed(self.seed, item_id), extra_headers=headers, **kwargs)
