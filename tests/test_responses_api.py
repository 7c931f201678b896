"""``POST /v1/responses`` driven by the real ``openai`` SDK (``client.responses``) against the real
server on the tiny model: function tools, function-call outputs, the SDK's streaming helper,
raw stream events, ``previous_response_id``, and what capture records (one session, main turns,
linked next states, token continuity, the response ids).

Where the random tiny model would decide the verdict, the path is forced: ``tool_choice`` names
the function (constrained decoding writes a complete call to a schema with an ``enum``), and a
free-text turn gets too few tokens for a complete call, so whatever the model writes is text.
"""

from __future__ import annotations

import json
import uuid

import httpx
import openai
import pytest

from openclaw_rl.capture.store import TrajectoryStore
from tests.support.sessions import turns_by_completion_id

CITIES = ["Paris", "Oslo"]
TOOLS = [{"type": "function", "name": "get_weather", "description": "The weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": CITIES}},
                         "required": ["city"], "additionalProperties": False}, "strict": True}]
FORCED = {"type": "function", "name": "get_weather"}


def _client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=300)


def _only_call(response) -> object:
    assert [item.type for item in response.output] == ["function_call"], response.output
    call = response.output[0]
    assert call.name == "get_weather" and json.loads(call.arguments)["city"] in CITIES
    return call


def test_a_responses_conversation_with_tools_is_one_recorded_session(tiny_server):
    """Three turns on the Responses API (a forced call, the streaming helper with a forced call
    after the first call's output, then free text via ``previous_response_id``, streamed raw; the
    client sends its instructions each time, as the API does not carry them over)
    are recorded as one session of main turns, each linked to the next state the client sent."""
    client = _client(tiny_server)
    instructions = f"You check the weather ({uuid.uuid4().hex})."
    history = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = client.responses.create(model="m", instructions=instructions, input=history, tools=TOOLS,
                                    tool_choice=FORCED, max_output_tokens=40, extra_body={"seed": 1})
    call1 = _only_call(first)
    assert first.status == "completed" and first.usage.output_tokens > 0

    history += [item.model_dump(exclude_none=True) for item in first.output]
    history.append({"type": "function_call_output", "call_id": call1.call_id, "output": "sunny, 21 C"})
    with client.responses.stream(model="m", instructions=instructions, input=history, tools=TOOLS,
                                 tool_choice=FORCED, max_output_tokens=40, extra_body={"seed": 2}) as stream:
        kinds = [event.type for event in stream]
        second = stream.get_final_response()
    call2 = _only_call(second)
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert "response.function_call_arguments.done" in kinds and kinds[-1] == "response.completed"

    # tools stay in the prompt (leaving them out would change the system prompt); 6 tokens are too
    # few for a complete call, so the reply is text whatever the model writes
    events = list(client.responses.create(
        model="m", instructions=instructions, tools=TOOLS, previous_response_id=second.id, max_output_tokens=6,
        extra_body={"seed": 3}, stream=True,
        input=[{"type": "function_call_output", "call_id": call2.call_id, "output": "rain, 9 C"}]))
    final = events[-1].response
    assert events[-1].type in ("response.completed", "response.incomplete")
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert final.output_text == deltas and [i.type for i in final.output] == ["message"]

    t1, t2, t3 = turns_by_completion_id(tiny_server, [first.id, second.id, final.id])
    assert t1.session_id == t2.session_id == t3.session_id
    assert [t.turn_type for t in (t1, t2, t3)] == ["main", "main", "main"]
    assert t1.messages[0] == {"role": "system", "content": instructions}
    assert (t1.next_state_role, t1.next_state) == ("tool", f"[tool {call1.call_id}] sunny, 21 C")
    assert (t2.next_state_role, t2.next_state) == ("tool", f"[tool {call2.call_id}] rain, 9 C")
    assert t1.status == t2.status == "ready" and t3.status == "awaiting_next"
    assert t1.finish_reason == t2.finish_reason == "tool_calls"
    assert [c["function"]["arguments"] for c in t1.tool_calls] == [call1.arguments]
    # token in, token out: each prompt extends the previous prompt and sampled ids
    assert t2.prefix_ok is True and t3.prefix_ok is True
    assert t3.prompt_ids[:len(t2.prompt_ids) + len(t2.response_ids)] == t2.prompt_ids + t2.response_ids
    assert len(t3.response_ids) == final.usage.output_tokens


def test_responses_bad_input_is_a_400_that_names_the_problem(tiny_server):
    """Unsupported items, unknown previous responses and unknown tools are 400s in OpenAI's shape;
    an unknown path is a 404 naming the served endpoints; none of them records anything."""
    client = _client(tiny_server)
    store = TrajectoryStore(tiny_server.buffer_dir)
    before = len(store.turns())
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input=[{"type": "web_search_call", "id": "ws_1", "status": "completed"}])
    assert err.value.body["param"] == "input.0.type" and "function_call_output" in err.value.body["message"]
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input="hi", previous_response_id="resp_never_seen")
    assert err.value.code == "previous_response_not_found"
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input="hi", tools=TOOLS, tool_choice={"type": "function", "name": "nope"})
    assert "nope" in err.value.body["message"]
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input=[{"role": "user", "content": "hi"},
                                                  {"type": "function_call", "call_id": "c1", "name": "f"}])
    assert "'arguments'" in err.value.body["message"]
    r = httpx.post(tiny_server.base_url + "/completions", json={"prompt": "hi"},
                   headers={"Authorization": "Bearer sk-test"})
    assert r.status_code == 404 and "POST /v1/responses" in r.json()["error"]["message"]
    assert len(store.turns()) == before
    store.close()


def test_a_kept_response_is_retrieved_as_it_ended(tiny_server):
    """``client.responses.retrieve`` gets a stored response (non-streamed or streamed) back as the
    client got it at its end; an id never kept, or a response sent with ``store: false``, is a 404
    ``response_not_found`` in OpenAI's shape."""
    client = _client(tiny_server)
    done = client.responses.create(model="m", input="What is the weather in Paris?", tools=TOOLS,
                                   tool_choice=FORCED, max_output_tokens=40, extra_body={"seed": 4})
    got = client.responses.retrieve(done.id)
    assert got.model_dump() == done.model_dump() and got.status == "completed"
    assert _only_call(got).call_id == _only_call(done).call_id
    events = list(client.responses.create(model="m", input="Say hi.", max_output_tokens=4, stream=True,
                                          extra_body={"seed": 5}))
    streamed = events[-1].response
    got = client.responses.retrieve(streamed.id)
    assert got.model_dump() == streamed.model_dump()
    assert got.output_text == streamed.output_text
    unkept = client.responses.create(model="m", input="Say hi.", max_output_tokens=2, store=False,
                                     extra_body={"seed": 6})
    for missing in ("resp_never_seen", unkept.id):
        with pytest.raises(openai.NotFoundError) as err:
            client.responses.retrieve(missing)
        assert err.value.code == "response_not_found" and missing in err.value.body["message"]
        assert err.value.body["type"] == "invalid_request_error"  # as OpenAI answers an unknown id
