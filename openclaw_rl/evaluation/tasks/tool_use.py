"""``tool-use``: BFCL (Berkeley Function Calling Leaderboard) simple, multiple and parallel calls.

The v4 data of ``bfcl-eval``: 400 ``simple`` (``simple_python``), 200 ``multiple`` and 200
``parallel`` entries, interleaved. The model gets the entry's function schemas as OpenAI
``tools``, converted as BFCL does for OpenAI-style function calling (``convert_to_tool`` with
``GORILLA_TO_OPENAPI``: ``dict`` -> ``object``, ``float`` -> ``number`` with a note, ``tuple`` ->
``array``, ``any`` -> ``string``; ``.`` in names -> ``_``; a Python-syntax note on each
description). Its ``tool_calls`` are decoded as ``[{name: json.loads(arguments)}]`` and checked by
:func:`~openclaw_rl.evaluation.bfcl_checker.ast_check`; the score is 1 when the calls are valid.
"""

from __future__ import annotations

import copy
import json

from openclaw_rl.evaluation.bfcl_checker import ast_check, openai_name
from openclaw_rl.evaluation.data import BFCL_CATEGORIES, bfcl
from openclaw_rl.evaluation.tasks.base import Task, interleave

GORILLA_TO_OPENAPI = {"integer": "integer", "number": "number", "float": "number", "string": "string",
                      "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "dict": "object",
                      "object": "object", "tuple": "array", "any": "string"}


def _cast_properties(properties: dict) -> dict:
    for value in properties.values():
        var_type = value.get("type")
        if var_type is None:
            value["type"] = "string"
            continue
        if var_type == "float":
            value["format"] = "float"
            value["description"] = value.get("description", "") + " This is a float type value."
        value["type"] = GORILLA_TO_OPENAPI.get(var_type, "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast_properties(value["properties"])
            elif "items" in value:
                items = value["items"]
                items["type"] = GORILLA_TO_OPENAPI.get(items.get("type"), "string")
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = GORILLA_TO_OPENAPI.get(items["items"].get("type"), "string")
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_properties(items["properties"])
    return properties


def to_openai_tools(functions: list[dict]) -> list[dict]:
    """BFCL function schemas as OpenAI ``tools`` (BFCL's ``convert_to_tool`` for OpenAI; input untouched)."""
    tools = []
    for fn in copy.deepcopy(functions):
        fn["name"] = openai_name(fn["name"])
        fn["description"] = fn.get("description", "") + " Note that the provided function is in Python 3 syntax."
        fn["parameters"]["type"] = "object"
        fn["parameters"]["properties"] = _cast_properties(fn["parameters"].get("properties", {}))
        tools.append({"type": "function", "function": fn})
    return tools


def decode_tool_calls(tool_calls) -> list[dict] | None:
    """``[{name: arguments_dict}]`` from OpenAI ``tool_calls``; None when an argument string is not JSON."""
    out = []
    for call in tool_calls or []:
        try:
            args = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError:
            return None
        out.append({call.function.name: args})
    return out


class ToolUseTask(Task):
    """BFCL AST accuracy over the ``simple``, ``multiple`` and ``parallel`` categories."""

    name = "tool-use"
    metric = "BFCL AST accuracy"
    kind = "proportion"
    max_tokens = 256

    def items(self) -> list[dict]:
        """The 800 entries, categories interleaved (``group`` = category)."""
        return interleave(*[[{**e, "group": c} for e in bfcl(c)] for c in BFCL_CATEGORIES])

    def run(self, item: dict, client) -> dict:
        """Send the question with the tools; score 1 when the returned calls pass the AST check."""
        response = client.chat(self.name, item["id"], item["question"][0], max_tokens=self.max_tokens,
                               tools=to_openai_tools(item["function"]))
        message = response.choices[0].message
        calls = decode_tool_calls(message.tool_calls)
        if calls is None:
            verdict = {"valid": False, "error": ["arguments are not valid JSON"], "error_type": "decode_error"}
        elif not calls:
            verdict = {"valid": False, "error": ["no function call"], "error_type": "no_call"}
        else:
            verdict = ast_check(item["function"], calls, item["ground_truth"], item["group"])
        return {"score": float(verdict["valid"]),
                "detail": {"calls": calls, "content": (message.content or "")[:2000],
                           "error_type": verdict.get("error_type"), "error": str(verdict.get("error"))[:1000]}}
