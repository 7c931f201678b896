"""Hand-written judge cases and a small evaluator (accuracy and invalid-vote rate of a backend).

Each :class:`JudgeCase` is one assistant turn with its next state and the verdict a careful
human would give: clear thanks / moving on / a successful tool result (``+1``), a correction,
retry request or tool error caused by the assistant (``-1``), and ambiguous follow-ups (``0``).

Run ``python -m openclaw_rl.judges.eval_cases --model-path builtin:smollm2-135m`` to measure both
local modes. Measured on ``builtin:smollm2-135m`` (CPU, float32, 12 cases, n=5 votes, threshold
0.5, seed 0; numbers in :data:`MEASURED_SMOLLM2`): ``logprob`` + argmax 41.7 % accuracy, 0 %
invalid votes; ``logprob`` + sampled votes 25 %, 0 % invalid; ``generate`` 16.7 %, 91.7 % invalid.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass

__all__ = ["JudgeCase", "CASES", "evaluate", "MEASURED_SMOLLM2"]


@dataclass(frozen=True)
class JudgeCase:
    """One judged turn: assistant output (+ tool calls), next state, its role, expected verdict."""

    name: str
    request: str
    response: str
    next_state: str
    role: str
    expected: int
    tool_calls: tuple = ()

    def messages(self) -> list[dict]:
        """The judge messages for this case."""
        from openclaw_rl.judges.prompts import build_judge_messages

        return build_judge_messages(self.response, self.next_state, self.role,
                                    list(self.tool_calls) or None, self.request)


def _call(name: str, **args) -> tuple:
    return ({"type": "function", "function": {"name": name, "arguments": json.dumps(args)}},)


CASES: tuple[JudgeCase, ...] = (
    JudgeCase("thanks", "What is the capital of France?", "The capital of France is Paris.",
              "Thanks, that's exactly what I needed!", "user", 1),
    JudgeCase("moves_on", "Convert 5 km to miles.", "5 km is about 3.11 miles.",
              "Great. Now convert 10 kg to pounds.", "user", 1),
    JudgeCase("perfect", "Write a haiku about rain.",
              "Soft rain on the roof\nwhispers to the sleeping town\npuddles hold the sky",
              "Perfect, I love it. Thank you!", "user", 1),
    JudgeCase("tool_ok", "Read the file notes.txt", "", "[tool call_1] Meeting at 3pm with Alice.\n"
              "Bring the budget report.", "tool", 1, _call("read", path="notes.txt")),
    JudgeCase("tool_ok_weather", "What's the weather in Berlin?", "",
              '[tool call_2] {"city": "Berlin", "temp_c": 18, "condition": "cloudy"}', "tool", 1,
              _call("get_weather", city="Berlin")),
    JudgeCase("correction", "What is 12 times 12?", "12 times 12 is 124.",
              "No, that's wrong. 12 times 12 is 144. Please check your math.", "user", -1),
    JudgeCase("wrong_thing", "Translate 'good morning' into Spanish.", "Bonjour!",
              "No, that's wrong, I asked for Spanish, not French.", "user", -1),
    JudgeCase("redo", "Summarise this paragraph in one sentence.",
              "Here is a long summary with five sentences about many things ...",
              "That's not one sentence. Try again, and keep it to one sentence.", "user", -1),
    JudgeCase("tool_error", "Read the file notes.txt", "",
              "[tool call_3] Error: file not found: notez.txt", "tool", -1,
              _call("read", path="notez.txt")),
    JudgeCase("tool_bad_args", "What's the weather in Berlin?", "",
              "[tool call_4] Error: missing required argument 'city'", "tool", -1,
              _call("get_weather", town="Berlin")),
    JudgeCase("ambiguous_ok", "Tell me about Mars.", "Mars is the fourth planet from the Sun.",
              "ok", "user", 0),
    JudgeCase("ambiguous_hmm", "Suggest a name for my cat.", "How about Whiskers?",
              "Hmm, let me think about it.", "user", 0),
)

#: Results of ``python -m openclaw_rl.judges.eval_cases`` on builtin:smollm2-135m (see module doc).
#: Expected labels: 5 x (+1), 5 x (-1), 2 x 0, so chance is ~33 % and "always +1" is 41.7 %.
#: ``generate``: temperature 0.7, 48 new tokens; 55 of 60 answers had no parseable verdict.
#: ``logprob``: per-case P(+1) is highest for the user-reply +1 cases (0.43-0.49) and the
#: clear correction is the only case with P(-1) > 0.5; tool results are near uniform.
#: Contextual calibration (dividing by the verdict distribution of an "N/A" prompt) and a
#: five-example few-shot prompt were also tried: 33 % and 41.7 %, so neither is used.
MEASURED_SMOLLM2: dict[str, dict] = {
    "logprob:argmax": {"accuracy": 5 / 12, "invalid_rate": 0.0},
    "logprob:sample": {"accuracy": 3 / 12, "invalid_rate": 0.0},
    "generate": {"accuracy": 2 / 12, "invalid_rate": 55 / 60},
}


async def evaluate(backend, cases=CASES, n: int = 5, threshold: float = 0.5) -> dict:
    """Judge every case with ``backend`` and majority voting.

    Args:
        backend: a :class:`~openclaw_rl.judges.backends.JudgeBackend`.
        cases: the cases (default :data:`CASES`).
        n: votes per case. threshold: majority threshold.

    Returns:
        ``{"accuracy", "invalid_rate", "per_case": [{name, expected, verdict, votes, probs}],
        "seconds"}``; accuracy compares the voted verdict with the expected one.
    """
    from openclaw_rl.judges.voting import majority_vote

    t0 = time.perf_counter()
    rows, invalid, total = [], 0, 0
    for case in cases:
        res = await backend.score(case.messages(), n)
        vote = majority_vote(res.votes, threshold)
        invalid += vote.n_invalid
        total += len(res.votes)
        rows.append({"name": case.name, "expected": case.expected, "verdict": vote.verdict,
                     "votes": res.votes, "probs": res.probs,
                     "texts": res.texts[:2] if res.probs is None else None})
    correct = sum(r["verdict"] == r["expected"] for r in rows)
    return {"accuracy": correct / len(rows), "invalid_rate": invalid / max(total, 1),
            "per_case": rows, "seconds": round(time.perf_counter() - t0, 1)}


def main(argv=None) -> None:
    """CLI: evaluate the local backend in each mode and print JSON summaries."""
    from openclaw_rl.judges.backends import LocalJudgeBackend

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-path", default="builtin:smollm2-135m")
    ap.add_argument("--modes", default="logprob:argmax,logprob:sample,generate")
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    shared = None
    for spec in args.modes.split(","):
        mode, _, vote = spec.partition(":")
        kw = dict(model=shared.model, tokenizer=shared.tokenizer) if shared else {}
        backend = LocalJudgeBackend(args.model_path, mode=mode, vote=vote or "argmax",
                                    seed=args.seed, **kw)
        shared = backend
        out = asyncio.run(evaluate(backend, n=args.n))
        summary = {k: out[k] for k in ("accuracy", "invalid_rate", "seconds")}
        print(json.dumps({"mode": spec, **summary}))
        if args.verbose:
            for row in out["per_case"]:
                print("   ", json.dumps(row, default=lambda p: round(p, 3)))


if __name__ == "__main__":
    main()
