"""``make run``: the main job on the embedded model.

Starts the intercept server on ``builtin:smollm2-135m`` (CPU) with capture on, holds a real
multi-turn conversation with it through the ``openai`` SDK (a user with a stated preference who
answers with natural feedback), then prints what was recorded: sessions, main/side turns, next
states with their roles, token counts and weight versions, and exports the sessions.

Until the trainer lands, this job exercises serving and capture only (the first two loops).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from openclaw_rl.capture.export import export_sessions
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.models import DEFAULT_MODEL
from openclaw_rl.server.launcher import running_server

QUESTIONS = ("What are three tips for staying productive when working from home?",
             "How do plants make their food?")
PREFERENCE = "Please answer in plain sentences, without markdown lists."


def _feedback(reply: str) -> str:
    """The simulated user's reply: a correction when the preference is violated, else thanks."""
    lines = [ln.strip() for ln in reply.splitlines() if ln.strip()]
    uses_list = any(ln[:2] in ("- ", "* ") or (ln[:1].isdigit() and ln[1:3] in (". ", ") ")) for ln in lines)
    uses_markdown = uses_list or "**" in reply or any(ln.startswith("#") for ln in lines)
    if uses_markdown:
        return "No lists or markdown please, I asked for plain sentences. Could you redo that?"
    return "Thanks, that is exactly the style I wanted."


def main(argv: list[str] | None = None) -> int:
    """Run the job; returns the exit code (1 if any request failed)."""
    import openai

    p = argparse.ArgumentParser(prog="make run", description=__doc__.split("\n\n")[0])
    p.add_argument("--model-path", default=DEFAULT_MODEL)
    p.add_argument("--out", default="outputs/main-job", help="run folder (buffer, export, logs)")
    p.add_argument("--max-tokens", type=int, default=96)
    a = p.parse_args(argv)
    out = Path(a.out) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    buffer_dir = out / "rl_buffer"
    failed = 0
    t0 = time.time()
    print(f"starting the server on {a.model_path} (first use converts the model; ~30 s)...", flush=True)
    with running_server(a.model_path, buffer_dir, "--served-model-name", "policy",
                        api_key="sk-local", log_dir=out) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0, timeout=600)
        for qi, question in enumerate(QUESTIONS):
            messages = [{"role": "system", "content": f"You are a helpful assistant. The user says: {PREFERENCE}"},
                        {"role": "user", "content": question}]
            for _turn in range(2):
                try:
                    stream = client.chat.completions.create(model="policy", messages=messages, stream=True,
                                                            max_tokens=a.max_tokens, temperature=0.7, seed=qi)
                    reply = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
                except openai.OpenAIError as exc:
                    failed += 1
                    print(f"request failed: {exc}", file=sys.stderr)
                    break
                print(f"\nuser: {messages[-1]['content']}\nassistant: {reply.strip()[:400]}")
                messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": _feedback(reply)}]
            # the last user feedback arrives as a final request that closes the session
            client.chat.completions.create(model="policy", messages=messages, max_tokens=1,
                                           extra_headers={"X-Session-Done": "true"})
    store = TrajectoryStore(buffer_dir)
    turns = store.turns()
    with open(out / "sessions.jsonl", "w") as fh:
        n_sessions = export_sessions(store, fh)
    summary = {"sessions": n_sessions, "main_turns": sum(t.turn_type == "main" for t in turns),
               "side_turns": sum(t.turn_type == "side" for t in turns),
               "main_turns_with_next_state": sum(t.turn_type == "main" and t.next_state is not None for t in turns),
               "status": store.counts(), "failed_requests": failed,
               "prefix_breaks": sum(t.prefix_ok is False for t in turns),
               "weight_versions": sorted({t.weight_version for t in turns}),
               "wall_s": round(time.time() - t0, 1), "buffer": str(store.path),
               "export": str(out / "sessions.jsonl")}
    store.close()
    print("\n== summary ==\n" + json.dumps(summary, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
