"""``response_format`` enforced by constrained decoding, and the one grammar of a request.

``{"type": "json_schema", "json_schema": {"schema": ...}}`` is not a hint: the reply is JSON that
follows the schema exactly (:func:`openclaw_rl.server.tool_choice.json_rule`: required keys present,
types right, no undeclared keys unless the schema allows them explicitly), in ``json.dumps``
layout, ended by the model's stop token as soon as the value is complete, so it always parses:
near ``max_tokens`` the engine closes the value in time (:mod:`openclaw_rl.engine.closing`: its
last string or list is cut short, finish reason ``stop``, where OpenAI returns ``length`` and
truncated JSON); only a reply that cannot be closed within ``max_tokens`` (or on an engine without
the closing, ``--backend vllm``) is cut, with finish reason ``length``. ``{"type": "json_object"}`` is any JSON
object. ``strict`` changes nothing: the schema is always enforced. With ``tools`` and
``tool_choice`` ``auto`` (or none given) the reply is either that JSON or tool calls (an agent with
an output type still calls its tools: one call, or several with ``parallel_tool_calls: true``, as
for a forced call); a forced ``tool_choice`` wins over ``response_format``.

A schema llguidance cannot compile is a 400 naming the reason, as is an engine without
constrained decoding. Streaming changes nothing (the same grammar constrains every token).
"""

from __future__ import annotations



from openclaw_rl.engine.grammar import grammar_error
from openclaw_rl.server.errors import APIError
from openclaw_rl.server.protocol import ChatCompletionRequest
from openclaw_rl.server.tool_choice import (first_lines, json_rule, several_calls, tool_call_rules,
                                            tool_choice_grammar)


def response_format_grammar(req: ChatCompletionRequest, tokenizer) -> str | None:
    """Lark grammar of a reply that follows ``req.response_format`` (or calls one of ``req.tools``
    when ``tool_choice`` lets the model choose); None for free text."""
    fmt = req.response_format
    if fmt is None or fmt.type == "text":
        return None
    schema = fmt.json_schema.schema_ if fmt.type == "json_schema" else {"type": "object"}
    rules = [json_rule("answer", schema)]
    if req.tools and req.tool_choice in (None, "auto"):
        functions = [t.function.model_dump(exclude_none=True) for t in req.tools]
        calls = tool_call_rules(tokenizer, functions, multiple=several_calls(req))
        return "\n".join(["start: answer | calls", *rules, *calls])
    return "\n".join(["start: answer", *rules])


def request_grammar(req: ChatCompletionRequest, tokenizer, engine=None) -> str | None:
    """The grammar that constrains the request's reply: the forced ``tool_choice``'s
    (:func:`~openclaw_rl.server.tool_choice.tool_choice_grammar`), else ``response_format``'s,
    else None (free decoding).

    Raises:
        APIError: 400 when the constraint cannot be enforced (an engine without constrained
            decoding, or a schema that does not compile).
    """
    forced = tool_choice_grammar(req, tokenizer, engine)
    if forced is not None:
        return forced
    grammar = response_format_grammar(req, tokenizer)
    if grammar is None:
        return None
    kind = req.response_format.type
    if engine is not None and not getattr(engine, "supports_grammar", False):
        raise APIError(400, f"response_format {kind!r} cannot be enforced by this engine (no constrained "
                            "decoding); use 'text'", param="response_format")
    error = grammar_error(grammar)
    if error:
        raise APIError(400, f"response_format cannot be enforced: the {kind} schema is not valid for constrained "
                            f"decoding ({first_lines(error)})", param="response_format.json_schema.schema",
                       code="invalid_schema")
    return grammar



