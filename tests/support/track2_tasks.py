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
* **gui** (``gui``, :class:`openclaw_rl.envs.gui.env.GuiTextEnv`, gui-rl's system message and
  ``computer`` tool): MiniWoB++'s ``focus-text`` page ("Focus into the textbox.") in Chromium,
  one seed per wording (the seed moves the textbox: the element table the policy sees differs;
  training seeds 0-7 in MiniWoB's ``train`` data mode, held out 1000-1003 in ``test``, as the
  family's own data). ``computer("pyautogui.press('tab')")`` focuses the textbox (MiniWoB's +1;
  a key press, so the one action is the same for every seed: a 2-layer model does not learn to
  copy coordinates in CI time), then "Done."; answering "I think it is done already." without
  acting leaves the page unsolved (-1).
* **swe** (``swe``, :class:`openclaw_rl.envs.swe.env.SweEnv`, the mini-swe-agent loop of
  swe-rl/generate.py, one step: ``max_turns`` 1): practice instances generated like the ipi ones
  (:mod:`tests.support.track2_swe_practice`: ``add`` subtracts, a pytest test fails; every
  instance carries a code-execution injection in a comment). One bash block ``sed -i ... &&
  echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` fixes and submits (resolved, +1); "I think it is
  fixed already." (no bash block) leaves the repository unchanged (unresolved, -1).

In every family the decision is the first token of the first reply (``<tool_call>`` or not),
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
from functools import lru_cache
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
SWE_STATEMENTS = (
    "`add(2, 3)` in `src/calc.py` returns -1 instead of 5. Fix it so `pytest tests/` passes.",
    "The `add` function in `src/calc.py` subtracts its arguments instead of adding them. Please fix it.",
    "Bug: `src/calc.py`'s `add(a, b)` gives `a - b`. It should return the sum. Fix the bug.",
    "`tests/test_calc.py` fails: `add(2, 3)` should be 5. Fix `add` in `src/calc.py`.",
    "Fix `add` in `src/calc.py`: it must return a + b, but it returns the difference.",
    "The calculator's `add` (in `src/calc.py`) is wrong: it subtracts. Make it add.",
    "`add` in `src/calc.py` returns the wrong result (2 and 3 give -1). Fix it and run `pytest tests/`.",
    "Please repair `src/calc.py`: `add(a, b)` should return the sum of a and b, not a - b.",
    # held out
    "In `src/calc.py`, `add` computes a minus b. Change it so it returns a plus b.",
    "The test `tests/test_calc.py::test_add` fails because `add` in `src/calc.py` subtracts. Fix the function.",
    "`add(a, b)` from `src/calc.py` should add its two numbers; it currently subtracts them. Fix it.",
    "Fix the addition bug in `src/calc.py`: `add(2, 3)` must equal 5.",
)
GUI_PAGE = "focus-text"
GUI_SEEDS = (0, 1, 2, 3, 4, 5, 6, 7, 1000, 1001, 1002, 1003)
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
GUI_BRANCHES = (
    Branch("press tab (focuses the textbox)", {"name": "computer", "arguments": {"action": "pyautogui.press('tab')"}},
           None, "Done."),
    Branch("claim it is done without acting", None, "I think it is done already.", None),
)
#: swe replies are mini-swe-agent text (one bash block), not tool calls: ``first_text`` is the whole reply
SWE_BRANCHES = (
    Branch("sed the fix, then submit", None,
           "```mswea_bash_command\n" + "sed -i 's/a - b/a + b/' src/calc.py && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
           + "\n```", None),
    Branch("claim it is fixed without acting", None, "I think it is fixed already.", None),
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


def gui_row(i: int) -> dict:
    """Dataset row of seed ``i`` (gui-rl's row format, :func:`openclaw_rl.envs.gui.data.rows_for`)."""
    from openclaw_rl.envs.gui.data import rows_for

    seed = GUI_SEEDS[i]
    return rows_for([GUI_PAGE], [seed], "train" if i < N_TRAIN else "test")[0]


@lru_cache(maxsize=1)
def _swe_instances() -> tuple[dict, ...]:
    from tests.support.track2_swe_practice import instances

    return tuple(instances([(f"practice-add-{j}", s) for j, s in enumerate(SWE_STATEMENTS)]))


def swe_row(i: int) -> dict:
    """Dataset row of statement ``i`` (swe-rl's row format, :func:`openclaw_rl.envs.swe.data.prompt_row`)."""
    from openclaw_rl.envs.swe.data import prompt_row

    return prompt_row(json.loads(json.dumps(_swe_instances()[i])))


FAMILIES = {
    "math-tool": {"rows": math_row, "branches": MATH_BRANCHES, "n": len(MATH_QUESTIONS),
                  "plugin": "toolcall-rl/generate_with_retool.py"},
    "terminal": {"rows": terminal_row, "branches": TERMINAL_BRANCHES, "n": len(TERMINAL_INSTRUCTIONS),
                 "plugin": "terminal-rl/generate.py"},
    "gui": {"rows": gui_row, "branches": GUI_BRANCHES, "n": len(GUI_SEEDS), "plugin": "gui-rl/generate.py",
            "system": "openclaw_rl.envs.gui.prompts:SYSTEM_PROMPT"},
    "swe": {"rows": swe_row, "branches": SWE_BRANCHES, "n": len(SWE_STATEMENTS), "plugin": "swe-rl/generate.py",
            "record": "swe", "settings": {"max_turns": 1}},
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


def _system(family: str) -> str | None:
    spec = FAMILIES[family].get("system")
    if not spec:
        return None
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


async def _record_swe(row: dict, branch: Branch) -> tuple[Demo, float]:
    """Play ``branch`` as one mini-swe-agent step (:func:`openclaw_rl.envs.swe.agent.run_swe_episode`
    with ``step_limit`` 1: the reply's single bash block runs, else the episode ends unchanged) in
    a fresh sandboxed copy of the instance; returns the demonstration and the score."""
    from openclaw_rl.envs.swe.agent import parse_action
    from openclaw_rl.envs.swe.env import SweEnv

    meta = row["metadata"]
    env = SweEnv(meta["task_key"], meta)
    try:
        first = await asyncio.to_thread(env.reset)
        msgs = [{"role": "system", "content": first["system"]}, {"role": "user", "content": first["observation"]},
                {"role": "assistant", "content": branch.first_text}]
        env.note_reply(branch.first_text)
        command, _ = parse_action(branch.first_text, env.config.action_regex)
        if command is not None:
            await asyncio.to_thread(env.run_command, command)
        score = float(await asyncio.to_thread(env.evaluate))
    finally:
        await asyncio.to_thread(env.close)
    return Demo(messages=msgs, tools=None, replies=[branch.first_text]), score


async def _record(row: dict, branch: Branch, system: str | None = None) -> tuple[Demo, float]:
    """Play ``branch`` in the real environment of ``row`` (after the family's ``system`` message,
    as the family's plugin sends it); returns the demonstration and its score."""
    from openclaw_rl.agentic.environment import make_env
    from openclaw_rl.agentic.pool_client import LocalEnvHandle

    meta = row["metadata"]
    env = LocalEnvHandle(make_env(meta["env_type"], meta["task_key"], dict(meta)))
    try:
        first = await env.reset()
        tools = first.get("tools") or None
        msgs: list[dict] = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": first["observation"]}]
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
                if FAMILIES[family].get("record") == "swe":
                    demo, score = await _record_swe(row, b)
                else:
                    demo, score = await _record(row, b, _system(family))
                out.append((demo, score, b.name))
        return out

    return asyncio.run(run())
