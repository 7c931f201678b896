"""``make run``: the main job on the embedded model, on CPU, end to end (``--method`` / ``METHOD``:
``combine`` by default, ``rl`` for Binary RL, ``opd`` for on-policy distillation).

1. Starts the intercept server on ``builtin:smollm2-135m`` with capture on.
2. Measures the preference-satisfaction rate on held-out MT-bench questions (side turns: never
   trained on).
3. Starts the trainer on Ray (rollout manager: store + judges -- the PRM for ``rl``, the hint
   judge for ``opd``, both for ``combine``; train actor: LoRA policy),
   while a simulated user with a stated preference (plain sentences, no markdown) talks to the
   server through the ``openai`` SDK and answers each reply with natural feedback. Every step's
   weights are published to the server while requests keep flowing.
4. Measures the satisfaction rate again and prints a summary: sessions, main/side turns, verdict
   counts, samples trained, steps, versions published, failed requests, before/after rates, and
   the path of the reward/loss plot, plus the dispatch counts and the hint acceptance rate.

``make run ARGS="--steps 20"`` trains longer.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

from openclaw_rl.models import DEFAULT_MODEL
from openclaw_rl.simulated_user import PREFERENCE, feedback, split_questions, violates_preference

API_KEY = "sk-local"
#: trainer flags per ``--method`` (``make run METHOD=rl|opd|combine``)
METHOD_ARGS = {"rl": ("--advantage-estimator", "broadcast"),
               "opd": ("--advantage-estimator", "opd", "--opd-teacher", "base"),
               "combine": ("--advantage-estimator", "combine", "--opd-teacher", "base")}
SYSTEM = "You are a helpful assistant."


def _client(base_url: str):
    import openai
    return openai.OpenAI(base_url=base_url + "/v1", api_key=API_KEY, max_retries=0, timeout=900)


def satisfaction_rate(base_url: str, questions: list[str], max_tokens: int) -> float:
    """Fraction of held-out questions whose first reply respects the preference (side turns)."""
    client = _client(base_url)
    ok = 0
    for i, q in enumerate(questions):
        r = client.chat.completions.create(
            model="policy", max_tokens=max_tokens, temperature=1.0, seed=1000 + i,
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{q}\n\n{PREFERENCE}"}],
            extra_headers={"X-Turn-Type": "side", "X-Session-Id": f"eval-{time.time_ns()}-{i}"})
        ok += not violates_preference(r.choices[0].message.content or "")
    return ok / max(1, len(questions))


class UserDriver(threading.Thread):
    """Simulated user: a session per question (question, reply, feedback, reply, done)."""

    def __init__(self, base_url: str, questions: list[str], max_tokens: int):
        super().__init__(daemon=True, name="simulated-user")
        self.base_url, self.questions, self.max_tokens = base_url, questions, max_tokens
        self.stop = threading.Event()
        self.sessions = self.requests = self.failed = 0

    def run(self) -> None:
        import openai
        client = _client(self.base_url)
        i = 0
        while not self.stop.is_set():
            q = self.questions[i % len(self.questions)]
            messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"{q}\n\n{PREFERENCE}"}]
            sid = f"user-{i}"
            for last in (False, True):
                headers = {"X-Session-Id": sid, **({"X-Session-Done": "true"} if last else {})}
                try:
                    r = client.chat.completions.create(model="policy", messages=messages, stream=True,
                                                       max_tokens=self.max_tokens, extra_headers=headers)
                    reply = "".join(c.choices[0].delta.content or "" for c in r if c.choices)
                    self.requests += 1
                except openai.OpenAIError as exc:
                    self.failed += 1
                    print(f"request failed: {exc}", file=sys.stderr)
                    break
                messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": feedback(reply)}]
            self.sessions += 1
            i += 1


def judgement_counts(store, turns) -> tuple[dict, dict, dict]:
    """Count the main turns' judgements: PRM verdicts ``{"+1", "-1", "0"}``, Combine/OPD branches
    ``{"both", "opd", "rl", "none"}`` and hints ``{"accepted", "rejected"}``."""
    verdicts: dict[str, int] = {}
    branches: dict[str, int] = {}
    hints = {"accepted": 0, "rejected": 0}
    for t in turns:
        j = store.judgement(t.id) if t.turn_type == "main" else None
        d = (j or {}).get("details") or {}
        if "verdict" in d:
            key = {1: "+1", -1: "-1"}.get(d["verdict"], "0")
            verdicts[key] = verdicts.get(key, 0) + 1
        if d.get("branch"):
            branches[d["branch"]] = branches.get(d["branch"], 0) + 1
        if "hint_accepted" in d:
            hints["accepted" if d["hint_accepted"] else "rejected"] += 1
    return verdicts, branches, hints


def main(argv: list[str] | None = None) -> int:
    """Run the main job; returns 0, or 1 if any request failed."""
    import ray

    from openclaw_rl.capture.store import TrajectoryStore
    from openclaw_rl.server.launcher import running_server
    from slime.run_args import parse_run_args
    from slime.train import train

    p = argparse.ArgumentParser(prog="make run", description="The main job on the embedded model.")
    p.add_argument("--model-path", default=DEFAULT_MODEL)
    p.add_argument("--steps", type=int, default=4, help="train steps (weight versions published)")
    p.add_argument("--batch-size", type=int, default=4, help="judged turns per step")
    p.add_argument("--max-tokens", type=int, default=80)
    p.add_argument("--held-out", type=int, default=8, help="held-out questions for the satisfaction rate")
    p.add_argument("--out", default="outputs/main-job")
    p.add_argument("--method", choices=sorted(METHOD_ARGS), default="combine",
                   help="rl (Binary RL), opd (on-policy distillation) or combine (both; default)")
    a = p.parse_args(argv)
    out = Path(a.out) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    train_q, test_q = split_questions(a.held_out)
    t0 = time.time()
    print(f"[main job] server on {a.model_path} (first use converts the model)...", flush=True)
    with running_server(a.model_path, out / "rl_buffer", "--served-model-name", "policy",
                        "--torch-threads", "1", api_key=API_KEY, log_dir=out) as server:
        base = server.base_url.rsplit("/v1", 1)[0]
        print(f"[main job] serving at {server.base_url}; measuring the preference-satisfaction rate on "
              f"{len(test_q)} held-out questions...", flush=True)
        before = satisfaction_rate(base, test_q, a.max_tokens)
        print(f"[main job] before: {before:.2f}; training {a.steps} steps with the simulated user...", flush=True)
        cfg = parse_run_args([
            "--model-path", a.model_path, "--server-url", base, "--api-key", API_KEY,
            "--rl-buffer-dir", str(out / "rl_buffer"), "--save", str(out / "ckpt"), "--save-interval", "2",
            "--log-dir", str(out / "logs"), "--num-rollout", str(a.steps),
            "--rollout-batch-size", str(a.batch_size), *METHOD_ARGS[a.method],
            "--use-lora", "--lora-rank", "8", "--lr", "2e-4", "--eps-clip", "0.2", "--eps-clip-high", "0.28",
            "--use-tis", "--max-staleness", "3", "--prm-mode", "logprob", "--majority-vote-n", "1",
            "--num-judge-workers", "1", "--rollout-max-response-len", str(a.max_tokens)])
        driver = UserDriver(base, train_q, a.max_tokens)
        driver.start()
        try:
            summary = train(cfg)
        finally:
            driver.stop.set()
            driver.join(900)
            ray.shutdown()
        after = satisfaction_rate(base, test_q, a.max_tokens)
    store = TrajectoryStore(out / "rl_buffer")
    turns = store.turns()
    verdicts, branches, hints = judgement_counts(store, turns)
    result = {"sessions": len(store.session_ids()), "main_turns": sum(t.turn_type == "main" for t in turns),
              "side_turns": sum(t.turn_type == "side" for t in turns), "method": a.method, "verdicts": verdicts,
              "dispatch": branches, "hints": hints,
              "hint_acceptance_rate": (hints["accepted"] / max(1, hints["accepted"] + hints["rejected"])
                                       if a.method != "rl" else None),
              "samples_trained": summary["samples_trained"], "steps": summary["steps"],
              "versions_published": summary["versions_published"], "failed_requests": driver.failed,
              "user_sessions": driver.sessions, "satisfaction_before": before, "satisfaction_after": after,
              "held_out_questions": len(test_q), "plot": summary.get("plot"),
              "buffer": str(store.path), "wall_s": round(time.time() - t0, 1)}
    store.close()
    (out / "summary.json").write_text(json.dumps(result, indent=2))
    print("\n== main job summary ==\n" + json.dumps(result, indent=2))
    return 1 if driver.failed else 0


if __name__ == "__main__":
    sys.exit(main())
