"""Token-in/token-out across turns: the share of turn transitions whose prompt extends exactly.

Run from the repository root::

    python benchmarks/prefix_continuity.py [--model-path builtin:tiny-qwen3] [--conversations 6]
                                           [--turns 3] [--max-tokens 24] [--temperature 0.7]
                                           [--tools] [--json OUT]

Starts the real intercept server (capture on, recording into a temporary folder) and holds
``--conversations`` conversations of ``--turns`` turns each through the ``openai`` SDK, as a stock
client does: each reply goes back as the assistant message exactly as received (its ``content``,
and its ``tool_calls`` when there are any), followed by a new user message. With ``--tools`` the
requests carry a tool list, every other turn asks for a call with ``tool_choice`` naming the
function, and the client answers each call with a tool result.

It then reads the trajectory store and reports, over all transitions between consecutive turns of
a conversation, how many have ``prefix_ok = true``: the next turn's ``prompt_ids`` start with the
previous turn's ``prompt_ids + response_ids`` (DESIGN.md invariant 1). Every request carries a
fixed seed, so the same code gives the same numbers on the same machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `python benchmarks/prefix_continuity.py` finds openclaw_rl

from openai import OpenAI  # noqa: E402

from openclaw_rl.capture.store import TrajectoryStore  # noqa: E402
from openclaw_rl.server.launcher import start_server, stop_server  # noqa: E402

TOPICS = ("tide pools", "bread baking", "binary search", "volcanoes", "chess openings", "compilers")
TOOLS = [{"type": "function", "function": {
    "name": "lookup", "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string", "maxLength": 12}},
                   "required": ["word"], "additionalProperties": False}}}]


def run_conversations(client: OpenAI, n_conv: int, n_turns: int, max_tokens: int,
                      temperature: float, tools: bool) -> None:
    """Hold the conversations; each is its own session (``X-Session-Id: bench-<i>``)."""
    for c in range(n_conv):
        msgs = [{"role": "user", "content": f"Tell me about {TOPICS[c % len(TOPICS)]}."}]
        for t in range(n_turns):
            kw = {}
            if tools:
                kw["tools"] = TOOLS
                if t % 2 == 0:
                    kw["tool_choice"] = {"type": "function", "function": {"name": "lookup"}}
            r = client.chat.completions.create(
                model="m", messages=msgs, max_tokens=max_tokens, temperature=temperature,
                seed=1000 * c + t, extra_headers={"X-Session-Id": f"bench-{c}"}, **kw)
            msg = r.choices[0].message
            echo = {"role": "assistant", "content": msg.content}
            if msg.tool_calls:
                echo["tool_calls"] = [tc.model_dump() for tc in msg.tool_calls]
            msgs.append(echo)
            for tc in msg.tool_calls or []:
                msgs.append({"role": "tool", "tool_call_id": tc.id, "content": f"result {t}"})
            msgs.append({"role": "user", "content": f"Say more, part {t + 2}."})


def prefix_share(store: TrajectoryStore, n_conv: int) -> dict:
    """Count transitions and how many of them extend the previous prompt + response exactly."""
    total = ok = 0
    breaks = []
    for c in range(n_conv):
        turns = store.turns(session_id=f"bench-{c}")
        for prev, cur in zip(turns, turns[1:]):
            total += 1
            exact = cur.prompt_ids[:len(prev.prompt_ids) + len(prev.response_ids)] == \
                prev.prompt_ids + prev.response_ids
            assert bool(cur.prefix_ok) == exact, "recorded prefix_ok disagrees with the ids"
            ok += int(exact)
            if not exact:
                breaks.append({"session": cur.session_id, "turn": cur.turn_index,
                               "break_at": cur.prefix_break_at,
                               "prev_len": len(prev.prompt_ids) + len(prev.response_ids)})
    return {"transitions": total, "prefix_ok": ok, "share": ok / total if total else None,
            "breaks": breaks}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-path", default="builtin:tiny-qwen3")
    p.add_argument("--conversations", type=int, default=6)
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=24)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--tools", action="store_true", help="tool list, named tool_choice, tool results")
    p.add_argument("--json", default=None, help="also write the result here")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(args.model_path, Path(tmp) / "rl_buffer", api_key="sk-bench")
        try:
            client = OpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0, timeout=300)
            run_conversations(client, args.conversations, args.turns, args.max_tokens,
                              args.temperature, args.tools)
        finally:
            stop_server(server)
        store = TrajectoryStore(Path(tmp) / "rl_buffer")
        result = prefix_share(store, args.conversations)
        store.close()
    result.update(model=args.model_path, max_tokens=args.max_tokens, temperature=args.temperature,
                  tools=args.tools)
    print(f"{args.model_path}{' (tools)' if args.tools else ''}: prefix_ok in {result['prefix_ok']} of "
          f"{result['transitions']} transitions ({100 * (result['share'] or 0):.0f}%)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
