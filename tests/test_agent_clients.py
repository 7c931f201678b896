"""Widely used agent clients that nobody here wrote, driven against the real server on the tiny
model: LangChain (``langchain-openai``: ``bind_tools``, streaming, ``with_structured_output`` on its
default method), LiteLLM (``litellm.completion`` with the server as an OpenAI-compatible base) and
the OpenAI Agents SDK (its default Responses path, a function tool and an ``output_type``). Each
conversation sends no capture headers and must be recorded as one session of trainable main
turns, each linked to the next state the client sent, its prompt extending the previous turn's
prompt and sampled ids (token in, token out).

Where the random tiny model would decide the verdict, the path is forced: a tool turn names the
function (constrained decoding writes a complete call to a schema with an ``enum``), an output
type has only an ``enum`` and a boolean, and a free-text turn gets too few tokens for a call.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Literal

import pytest
from pydantic import BaseModel

from tests.support.sessions import one_session

CITIES = ["Paris", "Oslo"]
WEATHER_FN = {"name": "get_weather", "description": "The weather in a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": CITIES}},
                             "required": ["city"]}}
TOOL = {"type": "function", "function": WEATHER_FN}
FORCED = {"type": "function", "function": {"name": "get_weather"}}


class Weather(BaseModel):
    """The output type."""

    city: Literal["Paris", "Oslo"]
    sunny: bool


def _marked(marker: str) -> str:
    return f"You check the weather ({marker})."


def test_langchain_tools_streaming_and_structured_output(tiny_server):
    """LangChain: a forced call through ``bind_tools``, the tool's result, a streamed text turn and
    a ``with_structured_output`` turn (default method) are one recorded session."""
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    marker = uuid.uuid4().hex

    def llm(**kw) -> ChatOpenAI:
        return ChatOpenAI(model="m", base_url=tiny_server.base_url, api_key="sk-test", max_retries=0,
                          timeout=300, **kw)

    history = [SystemMessage(_marked(marker)), HumanMessage("What is the weather in Paris?")]
    called = llm(max_tokens=40, seed=1).bind_tools([WEATHER_FN], tool_choice="get_weather").invoke(history)
    (call,) = called.tool_calls
    assert call["name"] == "get_weather" and call["args"]["city"] in CITIES
    history += [called, ToolMessage("sunny, 21 C", tool_call_id=call["id"])]

    chunks = list(llm(max_tokens=6, seed=2).bind_tools([WEATHER_FN]).stream(history))
    streamed = sum(chunks[1:], chunks[0])
    assert not streamed.tool_calls and isinstance(streamed.content, str)
    history += [streamed, HumanMessage("Now as JSON, please.")]

    # the default method (json_schema) binds no tools: the system prompt changes, which capture
    # detects (the last turn's prefix_ok is false)
    parsed = llm(max_tokens=40, seed=3).with_structured_output(Weather).invoke(history)
    assert isinstance(parsed, Weather)

    t1, t2, t3 = one_session(tiny_server, _marked(marker), 3)
    assert (t1.next_state_role, t1.next_state) == ("tool", f"[tool {call['id']}] sunny, 21 C")
    assert t1.finish_reason == "tool_calls" and json.loads(t1.tool_calls[0]["function"]["arguments"]) == call["args"]
    assert (t2.next_state_role, t2.next_state) == ("user", "Now as JSON, please.")
    assert t3.constrained and Weather.model_validate_json(t3.response_text) == parsed


def test_litellm_completion_against_the_server(tiny_server):
    """LiteLLM with the server as an OpenAI-compatible base: a forced call, its result, and a
    streamed text turn are one recorded session."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the price list
    import litellm

    marker = uuid.uuid4().hex
    base = {"model": "openai/m", "api_base": tiny_server.base_url, "api_key": "sk-test", "num_retries": 0,
            "timeout": 300}
    history = [{"role": "system", "content": _marked(marker)},
               {"role": "user", "content": "What is the weather in Oslo?"}]
    r = litellm.completion(messages=history, tools=[TOOL], tool_choice=FORCED, max_tokens=40, seed=1, **base)
    message = r.choices[0].message
    (call,) = message.tool_calls
    assert r.choices[0].finish_reason == "tool_calls" and json.loads(call.function.arguments)["city"] in CITIES
    history += [{"role": "assistant", "content": message.content,
                 "tool_calls": [{"id": call.id, "type": "function",
                                 "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
                {"role": "tool", "tool_call_id": call.id, "content": "rain, 9 C"}]
    chunks = list(litellm.completion(messages=history, tools=[TOOL], max_tokens=6, seed=2, stream=True, **base))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    history += [{"role": "assistant", "content": text}, {"role": "user", "content": "Thanks."}]
    litellm.completion(messages=history, tools=[TOOL], max_tokens=4, seed=3, **base)

    t1, t2, _ = one_session(tiny_server, _marked(marker), 3)
    assert (t1.next_state_role, t1.next_state) == ("tool", f"[tool {call.id}] rain, 9 C")
    assert t2.response_text == text and (t2.next_state_role, t2.next_state) == ("user", "Thanks.")


def test_openai_agents_sdk_tool_and_output_type(tiny_server):
    """The OpenAI Agents SDK on its default (Responses) path: the agent calls its function tool
    (forced on the first turn), then, with the tool disabled once used (``is_enabled``), answers
    with its output type (the grammar leaves the model no other way); the run is one recorded
    session of two main turns."""
    from agents import (Agent, ModelSettings, OpenAIResponsesModel, RunConfig, Runner, function_tool,
                        set_tracing_disabled)
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # traces would go to OpenAI's servers
    instructions = _marked(uuid.uuid4().hex)
    seen: list[str] = []

    @function_tool(is_enabled=lambda ctx, agent: not seen)  # once used, the agent must answer
    def get_weather(city: Literal["Paris", "Oslo"]) -> str:
        """The weather in a city.

        Args:
            city: the city.
        """
        seen.append(city)
        return "sunny, 21 C"

    client = AsyncOpenAI(base_url=tiny_server.base_url, api_key="sk-test", max_retries=0, timeout=300)
    agent = Agent(name="weather", instructions=instructions, tools=[get_weather], output_type=Weather,
                  model=OpenAIResponsesModel(model="m", openai_client=client),
                  model_settings=ModelSettings(tool_choice="get_weather", max_tokens=40))
    result = asyncio.run(Runner.run(agent, "What is the weather in Paris?", max_turns=3,
                                    run_config=RunConfig(tracing_disabled=True)))
    assert isinstance(result.final_output, Weather) and len(seen) == 1 and seen[0] in CITIES
    assert len(result.raw_responses) == 2
    turns = one_session(tiny_server, instructions, 2)
    assert [t.completion_id for t in turns] == [r.response_id for r in result.raw_responses]
    assert turns[0].finish_reason == "tool_calls" and turns[0].next_state_role == "tool"
    assert turns[-1].constrained and Weather.model_validate_json(turns[-1].response_text) == result.final_output
