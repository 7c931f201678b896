"""The practice tasks of the Track 2 learning tests, one small set per family, and their
demonstrations (recorded in the real environments).

What a tiny model can learn in CI time is one decision, so each family gets tasks where one
decision settles the outcome, in the family's real environment and scoring:

* **math-tool** (``math_tool``, :class:`openclaw_rl.envs.math_tool.env.MathToolEnv`): word
  problems whose answer is 2 + 3. The task prompt (the family's own) shows two examples, a
  ``print(2 + 3)`` interpreter call and ``\\boxed{42}``. Running the call and boxing what the
  interpreter printed is correct (+1); answering "I think the answer is \\boxed{42}." (the example's
  42) without running anything is wrong (upstream's shaped -1.1).
* **terminal** (``terminal``, :class:`openclaw_rl.envs.terminal.env.TerminalEnv`): a practice
  task in AgentBench's OS format (setup script, ``check_command``): "create an empty file named
  ``done``". ``shell_exec touch done`` (then "Done.") passes the check (+1); answering "I think it is
  done already." without running anything does not (-1).

In both families the decision is the first token of the first reply (``<tool_call>`` or not),
and the failing branch is a short reply without a tool call: negative advantages then fall on
those few tokens only, never on the tool call's JSON, which a 2-layer model keeps well-formed
only while nothing pushes its tokens down (a failing ``shell_exec ls`` branch, tried first, had
every GRPO step push the shared JSON tokens of its call down and garbled the calls within 3
steps). The failing reply also starts with another token than the good branch's final reply
(``I`` vs ``\\boxed`` / ``Done``), on the guess that with the same first token in two similar
reply-start contexts the advantages partly cancel there; measured, it did not learn faster (see
docs/track2.md, "Learning tests").

Each family has 12 wordings: 8 for training, 4 held out (never in a demonstration, never
trained on). The demonstrations give each training wording both first decisions equally often,
so the cold-started policy starts near 50/50 by construction (not by what a random model
happens to write), and RL must find the better one from the environment's reward.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

from openclaw_rl.agentic.cold_start import Demo

MATH_QUESTIONS = (
    "Tom has 2 apples and buys 3 more. How many apples does Tom have now?",
    "A shelf holds 2 red books and 3 blue books. How many books are on the shelf?",
    "Mia read 2 pages in the morning and 3 pages in the evening. How many pages did she read?",
    "There are 2 cats and 3 dogs in a yard. How many animals are in the yard?",
    "Sam scored 2 goals in the first half and 3 goals in the second half. How many goals did Sam score?",
    "A farmer plants 2 rows of corn on Monday and 3 rows on Tuesday. How many rows did he plant?",
    "Lena bakes 2 cakes and then 3 more cakes. How many cakes did Lena bake?",
    "A bus has 2 passengers and 3 more get on. How many passengers are on the bus?",
    # held out
    "Ben found 2 shells on the beach and his sister gave him 3 more. How many shells does Ben have?",
    "A jar has 2 cookies. Mom puts 3 more cookies in it. How many cookies are in the jar?",
    "Ava walked 2 miles on Saturday and 3 miles on Sunday. How many miles did she walk in total?",
    "A class planted 2 trees in spring and 3 trees in autumn. How many trees did the class plant?",
)
TERMINAL_INSTRUCTIONS = (
    "Create an empty file named `done` in the current directory.",
    "Make a new empty file called `done` in your working directory.",
    "Please create a file named `done` (it can be empty) in the current folder.",
    "In the current directory, create an empty file whose name is `done`.",
    "Create the file `done` in the working directory; it should be empty.",
    "Your task: make an empty file called `done` here.",
    "Add an empty file named `done` to the current directory.",
    "Create a file called `done` in the current directory. It does not need any content.",
    # held out
    "Put an empty file named `done` in the current working directory.",
    "Generate an empty file with the name `done` in this directory.",
    "We need a file called `done` in the current directory; create it empty.",
    "Create an empty `done` file in the directory you are in.",
)
N_TRAIN = 8
TERMINAL_SETUP = "mkdir -p notes && echo 'meeting at noon' > notes/todo.txt\n"
TERMINAL_CHECK = "test -f /home/agent/done && test ! -s /home/agent/done"


@dataclass(frozen=True)
class Branch:
    """One scripted behaviour: the first action, then the final reply after its observation
    (``final`` None: the first reply is already the final answer)."""

    name: str
    first_call: dict | None  # {"name", "arguments"} of the tool call, or None
    first_text: str | None   # the first reply's text when it calls no tool
    final: str | None


MATH_BRANCHES = (
    Branch("run print(2 + 3), box its output", {"name": "code_interpreter", "arguments": {"code": "print(2 + 3)"}},
           None, "\\boxed{5}"),
    Branch("box the prompt's example 42", None, "I think the answer is \\boxed{42}.", None),
)
TERMINAL_BRANCHES = (
    Branch("shell_exec touch done", {"name": "shell_exec", "arguments": {"command": "touch done"}}, None, "Done."),
    Branch("claim it is done without acting", None, "I think it is done already.", None),
)


def math_row(i: int) -> dict:
    """Dataset row (``{"prompt", "label", "metadata"}``, the family's format) of question ``i``."""
    from openclaw_rl.envs.math_tool.prompt import task_prompt

    q = MATH_QUESTIONS[i]
    return {"prompt": task_prompt(q), "label": "5",
            "metadata": {"task_key": f"practice-add-{i}", "env_type": "math_tool", "question": q, "label": "5"}}


def terminal_task(i: int) -> dict:
    """The ``task.json`` spec (AgentBench OS format, :mod:`openclaw_rl.envs.terminal.convert`) of
    wording ``i``."""
    return {"task_key": f"practice-done-{i}", "instruction": TERMINAL_INSTRUCTIONS[i], "setup": TERMINAL_SETUP,
            "evaluation": {"kind": "check_command", "command": TERMINAL_CHECK}, "scripts": {}}


def terminal_row(i: int) -> dict:
    """Dataset row of wording ``i`` (the full task spec in its metadata)."""
    task = terminal_task(i)
    return {"prompt": task["instruction"], "label": "",
            "metadata": {**task, "env_type": "terminal"}}


FAMILIES = {
    "math-tool": {"rows": math_row, "branches": MATH_BRANCHES, "n": len(MATH_QUESTIONS),
                  "plugin": "toolcall-rl/generate_with_retool.py"},
    "terminal": {"rows": terminal_row, "branches": TERMINAL_BRANCHES, "n": len(TERMINAL_INSTRUCTIONS),
                 "plugin": "terminal-rl/generate.py"},
}


def rows(family: str, split: str) -> list[dict]:
    """The ``train`` (8) or ``heldout`` (4) rows of ``family``."""
    spec = FAMILIES[family]
    idx = range(N_TRAIN) if split == "train" else range(N_TRAIN, spec["n"])
    return [spec["rows"](i) for i in idx]


def write_rows(family: str, split: str, path: Path) -> Path:
    """Write :func:`rows` as JSONL to ``path``; returns it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows(family, split)))
    return path


def _reply_text(call: dict) -> str:
    return "<tool_call>\n" + json.dumps(call) + "\n</tool_call>"


async def _record(row: dict, branch: Branch) -> tuple[Demo, float]:
    """Play ``branch`` in the real environment of ``row``; returns the demonstration and its score."""
    from openclaw_rl.agentic.environment import make_env
    from openclaw_rl.agentic.pool_client import LocalEnvHandle

    meta = row["metadata"]
    env = LocalEnvHandle(make_env(meta["env_type"], meta["task_key"], dict(meta)))
    try:
        first = await env.reset()
        tools = first.get("tools") or None
        msgs: list[dict] = [{"role": "user", "content": first["observation"]}]
        if branch.first_call is None:
            replies, final = [branch.first_text], branch.first_text
            msgs.append({"role": "assistant", "content": branch.first_text})
        else:
            call = branch.first_call
            obs = str(await env.exec_tool(call))
            msgs.append({"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_0", "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]})
            msgs.append({"role": "tool", "tool_call_id": "call_0", "content": obs})
            msgs.append({"role": "assistant", "content": branch.final})
            replies, final = [_reply_text(call), branch.final], branch.final
        score = float(await env.evaluate(final))
    finally:
        await env.close()
    return Demo(messages=msgs, tools=tools, replies=replies), score


def demonstrations(family: str) -> list[tuple[Demo, float, str]]:
    """Every (training wording, branch) pair played in the real environment: ``(demo, score,
    branch name)``; the held-out wordings are never used."""
    async def run():
        out = []
        for row in rows(family, "train"):
            for b in FAMILIES[family]["branches"]:
                demo, score = await _record(row, b)
                out.append((demo, score, b.name))
        return out

    return asyncio.run(run())
