"""Structured outputs and forced tool calls on a real small model, counted over fixed seeds.

Run from the repository root::

    python benchmarks/structured_outputs.py [--model-path builtin:smollm2-135m] [--seeds 20]

Starts the real server and, per seed, sends through the ``openai`` SDK:

* ``chat.completions.parse`` with a pydantic output type (a string, an integer, a list):
  counts replies that do not parse (``parse_failed``) and replies cut by ``max_tokens``;
* a forced call (``tool_choice`` names the function) to a function whose schema does not say
  ``additionalProperties: false``: counts calls with keys the schema does not declare
  (``undeclared_keys``), missing required keys and replies without a call;
* ``tool_choice: "required"``: counts replies that repeat the same call (``repeated_calls``) and
  replies cut by ``max_tokens`` (``runaway``, the calls lost with them).

Prints one JSON line of counts (the issue's "Done when": 0 that fail to parse, 0 undeclared keys,
0 runaway repeated calls).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import openai
from pydantic import BaseModel, ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.server import running_server  # noqa: E402


class Person(BaseModel):
    """The output type: what the text says about a person."""

    name: str
    age: int
    languages: list[str]


EXTRACT = [{"role": "user", "content": "Alice is 30 years old and speaks French and English. "
                                       "Give her name, age and languages."}]
TRAVEL = [{"role": "user", "content": "What time is it where I am going? I fly to Paris tomorrow."}]
TOOL = {"type": "function", "function": {"name": "local_time", "description": "The local time at a destination.",
                                         "parameters": {"type": "object",
                                                        "properties": {"destination": {"type": "string"}},
                                                        "required": ["destination"]}}}


def _parse_counts(client: openai.OpenAI, seeds: int, max_tokens: int) -> dict:
    failed = cut = 0
    for seed in range(seeds):
        try:
            r = client.chat.completions.parse(model="m", messages=EXTRACT, response_format=Person,
                                              max_tokens=max_tokens, seed=seed)
            cut += r.choices[0].finish_reason == "length"
            failed += not isinstance(r.choices[0].message.parsed, Person)
        except (openai.LengthFinishReasonError, ValidationError, json.JSONDecodeError):
            failed += 1
            cut += 1
    return {"parse_failed": failed, "parse_cut_by_max_tokens": cut}


def _forced_counts(client: openai.OpenAI, seeds: int, max_tokens: int) -> dict:
    undeclared = missing = no_call = 0
    for seed in range(seeds):
        r = client.chat.completions.create(model="m", messages=TRAVEL, tools=[TOOL], max_tokens=max_tokens,
                                           seed=seed, tool_choice={"type": "function",
                                                                   "function": {"name": "local_time"}})
        calls = r.choices[0].message.tool_calls or []
        no_call += not calls
        for call in calls:
            keys = set(json.loads(call.function.arguments))
            undeclared += bool(keys - {"destination"})
            missing += "destination" not in keys
    return {"forced_undeclared_keys": undeclared, "forced_missing_required": missing, "forced_no_call": no_call}


def _required_counts(client: openai.OpenAI, seeds: int, max_tokens: int) -> dict:
    repeated = runaway = 0
    for seed in range(seeds):
        r = client.chat.completions.create(model="m", messages=TRAVEL, tools=[TOOL], max_tokens=max_tokens,
                                           seed=seed, tool_choice="required")
        calls = [(c.function.name, c.function.arguments) for c in r.choices[0].message.tool_calls or []]
        repeated += len(set(calls)) < len(calls)
        runaway += r.choices[0].finish_reason == "length"
    return {"required_repeated_calls": repeated, "required_runaway": runaway}


def main() -> None:
    """Run the counts and print them as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-path", default="builtin:smollm2-135m")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, running_server(args.model_path, Path(tmp) / "buf") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0, timeout=600)
        counts = {"model": args.model_path, "seeds": args.seeds, "max_tokens": args.max_tokens}
        counts |= _parse_counts(client, args.seeds, args.max_tokens)
        counts |= _forced_counts(client, args.seeds, args.max_tokens)
        counts |= _required_counts(client, args.seeds, args.max_tokens)
    counts["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
