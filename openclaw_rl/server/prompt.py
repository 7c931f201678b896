"""Request messages -> chat-template messages -> prompt text and ids.

History tool calls are checked here so that the chat template never renders an invalid prompt:
``arguments`` given as an object is serialised as JSON; given as a string it must be JSON text
(an empty or blank string means no arguments and renders as ``{}``, as OpenAI's own clients
send for a call without parameters); any other string is a 400 naming the message and call.
"""

from __future__ import annotations

import json

from openclaw_rl.server.errors import APIError
from openclaw_rl.server.protocol import ChatCompletionRequest


def history_arguments(arguments, where: str) -> str:
    """The JSON text a history tool call's ``arguments`` renders as.

    Args:
        arguments: the request's ``function.arguments`` (a JSON string or an object).
        where: its location for the error message (``messages[3].tool_calls[0]``).

    Returns:
        The client's JSON text unchanged when it is valid JSON, ``"{}"`` for an empty string,
        ``json.dumps(arguments)`` for an object.

    Raises:
        APIError: 400 when a string is not valid JSON.
    """
    if not isinstance(arguments, str):
        return json.dumps(arguments, ensure_ascii=False)
    if not arguments.strip():
        return "{}"
    try:
        json.loads(arguments)
    except (json.JSONDecodeError, ValueError) as exc:
        raise APIError(400, f"{where}.function.arguments is not valid JSON ({exc.msg} at character "
                            f"{exc.pos}): {arguments[:80]!r}", param=f"{where}.function.arguments",
                       code="invalid_value") from exc
    return arguments


def template_messages(req: ChatCompletionRequest) -> list[dict]:
    """Messages as plain dicts for the chat template (developer -> system, parts joined; a
    message's ``name`` kept, so the store records it as the client sent it).

    Raises:
        APIError: 400 for a history tool call whose arguments are not valid JSON.
    """
    out = []
    for i, m in enumerate(req.messages):
        d: dict = {"role": "system" if m.role == "developer" else m.role, "content": m.text()}
        if m.name:  # kept for the store and for templates that render it (most ignore it)
            d["name"] = m.name
        if m.role == "assistant":
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.id, "type": "function",
                                    "function": {"name": c.function.name,
                                                 "arguments": history_arguments(
                                                     c.function.arguments, f"messages[{i}].tool_calls[{j}]")}}
                                   for j, c in enumerate(m.tool_calls)]
            if m.reasoning_content:
                d["reasoning_content"] = m.reasoning_content
        if m.role == "tool" and m.tool_call_id:
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


def request_tools(req: ChatCompletionRequest) -> list[dict] | None:
    """The tool list shown to the model (None without tools or with ``tool_choice: "none"``)."""
    if req.tools and req.tool_choice != "none":
        return [t.model_dump(exclude_none=True) for t in req.tools]
    return None


def render_text(tokenizer, messages: list[dict], tools: list[dict] | None,
                add_generation_prompt: bool = True) -> str:
    """The chat template's text for ``messages`` (and ``tools``).

    Raises:
        APIError: 400 when the template rejects the conversation or the text is not valid
            Unicode (lone surrogates cannot be tokenized).
    """
    try:
        text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False,
                                             add_generation_prompt=add_generation_prompt)
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise APIError(400, f"messages contain text that is not valid Unicode: {exc.reason}",
                       param="messages") from exc
    except Exception as exc:  # jinja errors from unusual histories
        raise APIError(400, f"messages could not be rendered by the chat template: {exc}",
                       param="messages") from exc
    return text


def tokenize(tokenizer, text: str) -> list[int]:
    """Token ids of rendered text (special-token markup becomes the special ids)."""
    return tokenizer(text, add_special_tokens=False)["input_ids"]
