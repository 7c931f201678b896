"""``tool_choice`` enforced by constrained decoding.

``"required"`` and ``{"type": "function", "function": {"name": ...}}`` are not hints: the reply
must be a call (to the named function, or to any of ``tools`` for ``"required"``). The server
turns them into a grammar (:mod:`openclaw_rl.engine.grammar`) in the tool-call format of the
built-in chat templates (Hermes / Qwen)::

    <tool_call>\\n{"name": "<function>", "arguments": <JSON per the function's parameters>}\\n</tool_call>

A forced reply ends by construction: a named function gets exactly one call, and so does
``"required"`` unless the request says ``parallel_tool_calls: true``; after the call the grammar is
complete and only the stop token may follow. (OpenAI reads an absent ``parallel_tool_calls`` as
true; here it means one call, because a small model told it must call may repeat the same call until
``max_tokens``: on 20 seeds smollm2-135m repeated a call in 4 replies and ran to ``max_tokens`` in 7,
``benchmarks/structured_outputs.py``.)
With ``parallel_tool_calls: true`` ``"required"`` allows one or more calls separated by a newline,
the model choosing when to stop. Nothing else may precede the call (no content, no ``<think>``).
Near ``max_tokens`` the engine closes the call in time (:mod:`openclaw_rl.engine.closing`: its
last argument string or list cut short); a forced reply that cannot be closed within
``max_tokens`` and is cut before its call is complete has no content either: the
unfinished markup is neither a call nor text (see :class:`openclaw_rl.server.tool_parser.OutputParser`). The arguments follow the function's
``parameters`` JSON schema exactly: required keys present, types right, and no key the schema does
not declare unless it allows other keys explicitly
(:func:`openclaw_rl.server.json_schema.closed_schema`); they are written without free whitespace
(``json.dumps`` layout); schema keywords llguidance does not implement are ignored, and a schema
it cannot compile is a 400 naming the function, as is an engine without constrained decoding. ``"auto"``, ``"none"`` and no ``tool_choice`` leave decoding free
(``"none"`` also hides the tools from the model).

When ``<tool_call>`` / ``</tool_call>`` are single tokens of the vocabulary (Qwen), the grammar
names those tokens, so the reply uses the same ids a model writes unconstrained; otherwise the
markers are plain text (SmolLM2).
"""

from __future__ import annotations

import json

from openclaw_rl.engine.grammar import grammar_error
from openclaw_rl.server.errors import APIError
from openclaw_rl.server.json_schema import closed_schema
from openclaw_rl.server.protocol import ChatCompletionRequest
from openclaw_rl.server.tool_parser import TOOL_CLOSE, TOOL_OPEN


#: arguments are written as ``json.dumps`` writes them (no free whitespace a model could pad
#: with); schema keywords llguidance does not implement are ignored rather than refused
_JSON_LAYOUT = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": ",
                "lenient": True}


def _marker(tokenizer, text: str) -> str:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return f"<[{ids[0]}]>" if len(ids) == 1 else json.dumps(text)


def first_lines(error: str) -> str:
    """llguidance's message without the grammar listing that follows it."""
    lines = []
    for line in error.splitlines():
        if line.lstrip().startswith("1 |"):
            break
        if line.strip():
            lines.append(line.strip())
    return " ".join(lines)


def _lark_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def json_rule(name: str, schema: dict) -> str:
    """The Lark rule ``name`` of a JSON value that follows ``schema`` exactly
    (:func:`~openclaw_rl.server.json_schema.closed_schema`), in ``json.dumps`` layout."""
    closed = {**closed_schema(schema), "x-guidance": _JSON_LAYOUT}
    return f"{name}: %json {json.dumps(closed, ensure_ascii=False)}"


def tool_call_rules(tokenizer, functions: list[dict], multiple: bool) -> list[str]:
    """The Lark rules of ``calls``: one call (or, with ``multiple``, several) to ``functions``.

    Args:
        tokenizer: the served tokenizer (decides whether the markers are single tokens).
        functions: OpenAI function definitions (``name``, optional ``parameters``).
        multiple: allow more calls after the first, each on its own line.
    """
    open_, close = _marker(tokenizer, TOOL_OPEN), _marker(tokenizer, TOOL_CLOSE)
    rules, alts = [], []
    for i, fn in enumerate(functions):
        head = '\n{"name": ' + json.dumps(fn["name"], ensure_ascii=False) + ', "arguments": '
        rules.append(json_rule(f"args_{i}", fn.get("parameters") or {"type": "object"}))
        alts.append(f"{_lark_str(head)} args_{i} {_lark_str('}' + chr(10))}")
    calls = "calls: call (\"\\n\" call)*" if multiple else "calls: call"
    return [calls, f"call: {open_} ({' | '.join(alts)}) {close}", *rules]


def tool_call_grammar(tokenizer, functions: list[dict], multiple: bool) -> str:
    """Lark grammar of a reply that is one (or, with ``multiple``, several) call(s)
    (:func:`tool_call_rules`)."""
    return "\n".join(["start: calls", *tool_call_rules(tokenizer, functions, multiple)])


def several_calls(req: ChatCompletionRequest) -> bool:
    """Whether a constrained reply may hold more than one call: only when the request says
    ``parallel_tool_calls: true`` (see the module docstring)."""
    return req.parallel_tool_calls is True


def tool_choice_grammar(req: ChatCompletionRequest, tokenizer, engine=None) -> str | None:
    """The grammar that enforces the request's ``tool_choice``, or None when nothing is forced.

    Raises:
        APIError: 400 when the choice cannot be enforced (an engine without constrained
            decoding, or a parameters schema that does not compile).
    """
    choice = req.tool_choice
    if not req.tools or choice in (None, "auto", "none"):
        return None
    functions = [t.function.model_dump(exclude_none=True) for t in req.tools]
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        functions = [f for f in functions if f["name"] == name][:1]
    if engine is not None and not getattr(engine, "supports_grammar", False):
        raise APIError(400, f"tool_choice {json.dumps(choice)} cannot be enforced by this engine "
                            "(no constrained decoding); use 'auto'", param="tool_choice")
    grammar = tool_call_grammar(tokenizer, functions, multiple=choice == "required" and several_calls(req))
    error = grammar_error(grammar)
    if error:
        names = ", ".join(f["name"] for f in functions)
        raise APIError(400, f"tool_choice cannot be enforced: the parameters schema of {names} is not "
                            f"valid for constrained decoding ({first_lines(error)})",
                       param="tool_choice")
    return grammar
