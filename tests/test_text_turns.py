"""Hand-written and imported sessions without ids: tokenized with the policy's chat template,
marked, trained with the trainer's own log-probs; the loss mask covers exactly the response."""

from __future__ import annotations

import json

import pytest

from openclaw_rl.capture.export import export_sessions, import_sessions
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.capture.text_turns import end_of_turn_id, tokenize_untokenized_turns
from openclaw_rl.models import load_tokenizer
from openclaw_rl.rollout.samples import turn_to_sample
from slime.record.batch import collate_samples
from slime.record.sample import LogprobSource

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Refactor this to async/await."},
            {"role": "assistant", "content": "Which function?"}, {"role": "user", "content": "fetch_all()"}]
SESSION = {"session_id": "hand", "turns": [
    {"type": "main", "prompt": MESSAGES, "response": "Here it is: async def fetch_all(): ...",
     "next_state": "Perfect, thanks!"},
    {"type": "main", "prompt": "What is 2+2?", "response": "4"},
    {"type": "side", "prompt": "title this chat", "response": "Math", "trainable": False}]}


@pytest.fixture(scope="module", params=["builtin:tiny-qwen3", "builtin:smollm2-135m"])
def tokenizer(request):
    return load_tokenizer(request.param)


def _file(tmp_path, sessions=(SESSION,)):
    path = tmp_path / "sessions.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in sessions))
    return path


def _render(tok, messages):
    return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def test_import_without_ids_renders_the_prompt_and_ends_the_response(tmp_path, tokenizer):
    store = TrajectoryStore(tmp_path / "buf")
    assert import_sessions(store, _file(tmp_path)) == (1, 3)
    listed, plain, side = store.turns()
    assert listed.prompt_ids == [] and listed.prompt_text == ""  # never a JSON dump of the messages
    assert "[{" not in listed.prompt_text and plain.prompt_text == "What is 2+2?"
    assert tokenize_untokenized_turns(store, tokenizer) == 2  # the side turn is never trained
    listed, plain, side = store.turns()
    eot = end_of_turn_id(tokenizer)
    assert tokenizer.convert_ids_to_tokens(eot) == "<|im_end|>"
    for turn, messages, response in ((listed, MESSAGES, "Here it is: async def fetch_all(): ..."),
                                     (plain, [{"role": "user", "content": "What is 2+2?"}], "4")):
        text = _render(tokenizer, messages)
        assert turn.prompt_text == text and text.endswith("<|im_start|>assistant\n")
        assert turn.prompt_ids == tokenizer(text, add_special_tokens=False)["input_ids"]
        assert turn.response_ids == tokenizer(response, add_special_tokens=False)["input_ids"] + [eot]
        assert turn.ids_from_text is True and turn.response_logprobs == []
    assert side.prompt_ids == [] and side.ids_from_text is None


def test_loss_mask_covers_exactly_the_response_position_by_position(tmp_path, tokenizer):
    store = TrajectoryStore(tmp_path / "buf")
    import_sessions(store, _file(tmp_path), tokenizer=tokenizer)  # tokenized at import
    turn = store.turns()[0]
    sample = turn_to_sample(turn, 1.0, True)
    assert sample.logprob_source == LogprobSource.NONE
    P, R = len(turn.prompt_ids), len(turn.response_ids)
    assert sample.tokens == turn.prompt_ids + turn.response_ids and sample.response_length == R
    batch = collate_samples([sample])
    mask = batch.loss_mask_B_T[0].tolist()
    response = batch.response_mask_B_T[0].tolist()
    assert len(mask) == P + R
    for pos in range(P + R):
        want = 1.0 if pos >= P else 0.0
        assert mask[pos] == want, f"loss mask at {pos} (prompt {P}, response {R})"
        assert response[pos] == (pos >= P)
    assert sample.tokens[P + R - 1] == end_of_turn_id(tokenizer)  # the end of turn is trained
    assert tokenizer.decode(sample.tokens[P:P + R - 1]) == "Here it is: async def fetch_all(): ..."


def test_already_rendered_prompt_is_tokenized_as_it_is(tmp_path, tokenizer):
    text = _render(tokenizer, [{"role": "user", "content": "hello"}])
    store = TrajectoryStore(tmp_path / "buf")
    import_sessions(store, _file(tmp_path, [{"session_id": "r", "turns": [{"prompt": text, "response": "hi"}]}]),
                    tokenizer=tokenizer)
    turn = store.turns()[0]
    assert turn.prompt_text == text  # not wrapped as a user message a second time
    assert turn.prompt_ids == tokenizer(text, add_special_tokens=False)["input_ids"]


def test_export_of_text_made_turns_round_trips(tmp_path, tokenizer):
    store = TrajectoryStore(tmp_path / "buf")
    import_sessions(store, _file(tmp_path), tokenizer=tokenizer)
    out = tmp_path / "export.jsonl"
    with out.open("w") as f:
        export_sessions(store, f)
    line = json.loads(out.read_text())
    assert line["turns"][0]["ids_from_text"] is True and line["turns"][0]["response_logprobs"] == []
    again = TrajectoryStore(tmp_path / "buf2")
    import_sessions(again, out)
    assert [(t.prompt_ids, t.response_ids, t.ids_from_text) for t in again.turns()] == \
        [(t.prompt_ids, t.response_ids, t.ids_from_text) for t in store.turns()]
    assert turn_to_sample(again.turns()[0], 1.0, True).logprob_source == LogprobSource.NONE
