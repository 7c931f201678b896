"""Request schema of ``POST /v1/chat/completions`` (OpenAI Chat Completions, the subset served).

Validation is strict on what we act on (roles, types, ranges) and lenient on unknown fields
(clients such as OpenClaw send vendor fields; those are ignored, never an error).
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class TextPart(_Lenient):
    """A text content part."""

    type: Literal["text", "input_text", "output_text"]
    text: str


class ImageURL(_Lenient):
    url: str
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(_Lenient):
    """An image content part (``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``);
    served only by a vision-language model, and only as a ``data:`` URL
    (:mod:`openclaw_rl.server.images`)."""

    type: Literal["image_url"]
    image_url: ImageURL


class FunctionCall(_Lenient):
    name: str
    arguments: Union[str, dict[str, Any]] = "{}"


class ToolCall(_Lenient):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_Lenient):
    """One chat message.

    ``content`` is a string, a list of text and image parts, or null (only for an assistant
    message that carries ``tool_calls``).
    """

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Union[str, list[Union[TextPart, ImagePart]], None] = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None

    @model_validator(mode="after")
    def _content_required(self) -> "Message":
        if self.content is None and not (self.role == "assistant" and self.tool_calls):
            raise ValueError(f"a {self.role} message needs 'content' (null is allowed only for "
                             "an assistant message with tool_calls)")
        return self

    def text(self) -> str:
        """The content as one string (text parts joined; image parts are left out)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    def image_parts(self) -> list[tuple[int, "ImagePart"]]:
        """``(part index, part)`` of the content's image parts, in order (empty for text)."""
        if not isinstance(self.content, list):
            return []
        return [(j, p) for j, p in enumerate(self.content) if isinstance(p, ImagePart)]


class FunctionDef(_Lenient):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(_Lenient):
    type: Literal["function"] = "function"
    function: FunctionDef


class JSONSchemaFormat(_Lenient):
    """``response_format.json_schema``: the schema the reply must follow."""

    name: str = "response"
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class ResponseFormat(_Lenient):
    """``response_format``: ``text`` (free), ``json_object`` (any JSON object) or ``json_schema``
    (JSON that follows ``json_schema.schema``), enforced by constrained decoding
    (:mod:`openclaw_rl.server.response_format`)."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JSONSchemaFormat | None = None

    @model_validator(mode="after")
    def _schema_given(self) -> "ResponseFormat":
        if self.type == "json_schema" and (self.json_schema is None or self.json_schema.schema_ is None):
            raise ValueError("response_format of type 'json_schema' needs json_schema.schema")
        return self


class StreamOptions(_Lenient):
    include_usage: bool = False


class ChatCompletionRequest(_Lenient):
    """The request body. Capture fields: ``session_id``, ``turn_type`` (also as headers)."""

    model: str | None = None
    messages: list[Message] = Field(min_length=1)
    tools: list[Tool] | None = None
    tool_choice: Union[Literal["none", "auto", "required"], dict[str, Any], None] = None
    response_format: ResponseFormat | None = None
    parallel_tool_calls: StrictBool | None = None
    max_tokens: StrictInt | None = Field(default=None, ge=1)
    max_completion_tokens: StrictInt | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    stop: Union[str, list[str], None] = None
    seed: StrictInt | None = Field(default=None, ge=-(2 ** 63), le=2 ** 64 - 1)
    logprobs: StrictBool | None = None
    top_logprobs: StrictInt | None = Field(default=None, ge=0, le=20)
    user: str | None = None
    n: StrictInt | None = None
    stream: StrictBool = False
    stream_options: StreamOptions | None = None
    prompt_cache_key: str | None = None
    session_id: str | None = None
    turn_type: Literal["main", "side"] | None = None

    @field_validator("n")
    @classmethod
    def _only_one_choice(cls, v: int | None) -> int | None:
        if v is not None and v != 1:
            raise ValueError("only n=1 is supported")
        return v

    @field_validator("stop")
    @classmethod
    def _stop_list(cls, v):
        if isinstance(v, list) and len(v) > 4:
            raise ValueError("at most 4 stop sequences")
        return v

    @model_validator(mode="after")
    def _tool_choice_matches_tools(self) -> "ChatCompletionRequest":
        names = {t.function.name for t in self.tools or []}
        if self.tool_choice == "required" and not names:
            raise ValueError("tool_choice 'required' needs tools")
        if isinstance(self.tool_choice, dict):
            name = (self.tool_choice.get("function") or {}).get("name")
            if name not in names:
                raise ValueError(f"tool_choice names function {name!r}, which is not in tools")
        return self

    def stop_sequences(self) -> list[str]:
        """``stop`` as a list of non-empty strings."""
        if self.stop is None:
            return []
        return [s for s in ([self.stop] if isinstance(self.stop, str) else self.stop) if s]

    def completion_budget(self, default: int) -> int:
        """``max_completion_tokens`` (preferred) or ``max_tokens`` or ``default``."""
        return self.max_completion_tokens or self.max_tokens or default
