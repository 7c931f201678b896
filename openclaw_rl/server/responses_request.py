"""The request body of ``POST /v1/responses`` (the OpenAI Responses API,
https://platform.openai.com/docs/api-reference/responses) as pydantic models: the subset the server
serves (:mod:`openclaw_rl.server.responses_api` says which fields and how they are translated).
Unknown fields are allowed and ignored, as the API's clients send more than is served.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class ContentPart(_Lenient):
    """A content part of an input message, a function call output or a reasoning item."""

    type: Literal["input_text", "output_text", "text", "refusal", "input_image", "summary_text",
                  "reasoning_text"]
    text: str | None = None
    refusal: str | None = None
    image_url: str | None = None
    detail: Literal["auto", "low", "high"] | None = None

    @model_validator(mode="after")
    def _fields(self) -> "ContentPart":
        if self.type == "input_image" and not self.image_url:
            raise ValueError("an input_image part needs 'image_url' (a data: URL); file_id is not served")
        if self.type == "refusal" and self.refusal is None:
            raise ValueError("a refusal part needs 'refusal'")
        if self.type not in ("input_image", "refusal") and self.text is None:
            raise ValueError(f"a {self.type} part needs 'text'")
        return self

    def to_chat(self) -> dict:
        """The chat completions part (``text`` or ``image_url``)."""
        if self.type == "input_image":
            return {"type": "image_url", "image_url": {"url": self.image_url, "detail": self.detail or "auto"}}
        return {"type": "text", "text": self.refusal if self.type == "refusal" else self.text}


def parts_text(content: Union[str, list[ContentPart], None]) -> str:
    """The text of ``content`` (a string, or parts: their text, images left out; ``""`` for None)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.to_chat().get("text", "") for p in content if p.type != "input_image")


class InputItem(_Lenient):
    """One item of ``input``: a message (``type`` may be left out), a ``function_call`` the model
    made, a ``function_call_output`` the client sends back, or a ``reasoning`` item."""

    type: Literal["message", "function_call", "function_call_output", "reasoning"] = "message"
    role: Literal["user", "system", "developer", "assistant"] | None = None
    content: Union[str, list[ContentPart], None] = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    output: Union[str, list[ContentPart], None] = None
    summary: list[ContentPart] | None = None

    @model_validator(mode="after")
    def _fields(self) -> "InputItem":
        need = {"message": ("role", "content"), "function_call": ("call_id", "name", "arguments"),
                "function_call_output": ("call_id", "output")}.get(self.type, ())
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.type} item needs {', '.join(repr(f) for f in missing)}")
        return self


class FunctionToolDef(_Lenient):
    """A function tool (``{"type": "function", "name", "description", "parameters", "strict"}``)."""

    type: Literal["function"]
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class FunctionChoice(_Lenient):
    """``tool_choice`` naming a function (``{"type": "function", "name": ...}``)."""

    type: Literal["function"]
    name: str


class TextFormat(_Lenient):
    """``text.format``: ``text``, ``json_object`` or ``json_schema`` (``name``, ``schema``, ``strict``),
    passed on as chat's ``response_format`` (:mod:`openclaw_rl.server.response_format`)."""

    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class TextConfig(_Lenient):
    """``text``: the reply's format."""

    format: TextFormat | None = None


class ResponsesRequest(_Lenient):
    """The request body of ``POST /v1/responses`` (the subset served, see the module docstring)."""

    model: str | None = None
    input: Union[str, list[InputItem]]
    instructions: str | None = None
    tools: list[FunctionToolDef] | None = None
    tool_choice: Union[Literal["none", "auto", "required"], FunctionChoice, None] = None
    parallel_tool_calls: StrictBool | None = None
    max_output_tokens: StrictInt | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    stream: StrictBool = False
    previous_response_id: str | None = None
    store: StrictBool | None = None
    user: str | None = None
    prompt_cache_key: str | None = None
    text: TextConfig | None = None
    metadata: dict[str, Any] | None = None
    seed: StrictInt | None = None
    session_id: str | None = None
    turn_type: Literal["main", "side"] | None = None
