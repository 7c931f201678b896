"""The task text a math_tool episode starts with, and the ``code_interpreter`` tool schema.

The format follows ReTool (Feng et al. 2025, arXiv:2504.11536) as upstream's toolcall-rl uses it:
the model calls ``code_interpreter`` with a ``<tool_call>`` JSON object (Qwen's tool-call format),
the program's output comes back inside ``<interpreter>...</interpreter>``, and the final answer
is written in ``\\boxed{}``.
"""

from __future__ import annotations

__all__ = ["CODE_INTERPRETER_SCHEMA", "ENV_TYPE", "INSTRUCTIONS", "TOOL_NAME", "task_prompt"]

#: the ``env_type`` of the family's dataset rows and its name in the environment registry
ENV_TYPE = "math_tool"
TOOL_NAME = "code_interpreter"

#: OpenAI tool schema of the interpreter (upstream's name and argument)
CODE_INTERPRETER_SCHEMA: dict = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": ("Run a Python 3 program in a sandbox (standard library only, no network) and return what "
                        "it prints (stdout and stderr). Each call starts clean (no variables or files carry over): "
                        "print the values you need."),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Python code to execute"}},
            "required": ["code"],
        },
    },
}

INSTRUCTIONS = (
    "Solve the following math problem. You may run Python code with the code_interpreter tool by writing\n"
    '<tool_call>{"name": "code_interpreter", "arguments": {"code": "print(2 + 3)"}}</tool_call>\n'
    "The program's output comes back inside <interpreter>...</interpreter>; print the values you need. "
    "Put your final numeric answer (without units, currency symbols or percentage signs) in \\boxed{}, "
    "for example \\boxed{42}."
)


def task_prompt(question: str) -> str:
    """The first observation of an episode: :data:`INSTRUCTIONS`, a blank line, then ``question``."""
    return f"{INSTRUCTIONS}\n\nProblem: {question.strip()}"
