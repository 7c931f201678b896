"""Explicit feedback on a real server: ``POST /v1/feedback``, ``DELETE /v1/feedback/{id}``, the
rating overriding the real judge's vote in the trained sample, the judge's agreement on
``/admin/feedback`` and ``/metrics``, and bad input (unknown id, double undo, a side turn)."""

from __future__ import annotations

import httpx

import pytest

from openclaw_rl.capture.store import JUDGED, TRAINED, TrajectoryStore
from openclaw_rl.models import load_tokenizer
from openclaw_rl.rollout.data_source import RolloutTimeout, StoreDataSource
from tests.support.control import AUTH, client, converse, judge_all
from tests.support.server import running_server

PRAISE = "Perfect, thank you, that is exactly right!"


def _root(server) -> str:
    return server.base_url.rsplit("/v1", 1)[0]


def _post(server, body, **kw) -> httpx.Response:
    return httpx.post(_root(server) + "/v1/feedback", headers=AUTH, timeout=60, **kw) if "content" in kw else \
        httpx.post(_root(server) + "/v1/feedback", headers=AUTH, json=body, timeout=60)


def _error(r: httpx.Response, status: int, code: str | None) -> dict:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["message"] and err["type"] == "invalid_request_error"
    if code is not None:
        assert err["code"] == code, err
    return err


def test_feedback_overrides_the_judge_and_bad_input_is_refused(tmp_path):
    buf = tmp_path / "rl_buffer"
    with running_server("builtin:tiny-qwen3", buf) as server:
        ids = converse(server, "s-feedback", ["What is two plus two?", PRAISE, "And three plus three?", PRAISE,
                                              "Bye."])
        side = client(server).chat.completions.create(
            model="policy", messages=[{"role": "user", "content": "Summarise the chat in a title"}], max_tokens=4,
            extra_headers={"X-Session-Id": "s-feedback", "X-Turn-Type": "side"})
        assert judge_all(buf) == 4  # turns 0..3 have their next state; the judge praised 0 and 2

        # rate turn 0 (the judge said +1) with -1 and a correction; by completion id
        r = _post(server, {"id": ids[0], "rating": -1, "correction": "Answer with the number only: 4."})
        assert r.status_code == 200, r.text
        fb = r.json()
        assert (fb["object"], fb["turn_id"], fb["rating"], fb["judge_vote"], fb["after_training"]) == \
            ("feedback", "s-feedback:0", -1, 1, False)
        # turn 2 by its turn id, +1 (agrees with the judge)
        assert _post(server, {"turn_id": "s-feedback:2", "rating": 1}).json()["judge_vote"] == 1

        store = TrajectoryStore(buf)
        try:
            before = store.counts()
            # bad input: clear 4xx, nothing recorded changes
            _error(_post(server, {"id": "chatcmpl-nope", "rating": 1}), 404, "turn_not_found")
            _error(_post(server, {"id": side.id, "rating": 1}), 400, "turn_not_rateable")
            _error(_post(server, {"id": ids[1], "rating": 2}), 400, "invalid_value")
            _error(_post(server, {"id": ids[1], "rating": "1"}), 400, "invalid_value")
            _error(_post(server, {"id": ids[1], "rating": True}), 400, "invalid_value")
            _error(_post(server, {"rating": 1}), 400, "invalid_value")
            _error(_post(server, {"id": ids[1], "turn_id": "s-feedback:1", "rating": 1}), 400, "invalid_value")
            _error(_post(server, {"id": ids[1], "rating": 1, "stars": 5}), 400, "invalid_value")
            _error(_post(server, None, content=b"{not json"), 400, "invalid_json")
            assert httpx.post(_root(server) + "/v1/feedback", json={"id": ids[1], "rating": 1},
                              timeout=60).status_code == 401  # the API key's endpoint
            # undo, then a double undo
            r = httpx.delete(_root(server) + f"/v1/feedback/{ids[1]}", headers=AUTH)
            _error(r, 404, "feedback_not_found")  # never rated
            assert _post(server, {"id": ids[1], "rating": 1}).status_code == 200
            r = httpx.delete(_root(server) + f"/v1/feedback/{ids[1]}", headers=AUTH)
            assert r.status_code == 200 and r.json()["deleted"] is True
            _error(httpx.delete(_root(server) + f"/v1/feedback/{ids[1]}", headers=AUTH), 404, "feedback_not_found")
            _error(httpx.delete(_root(server) + "/v1/feedback/chatcmpl-nope", headers=AUTH), 404, "turn_not_found")
            assert store.counts() == before

            # training: the rating overrides the judge's +1; the correction is the turn's hint
            tok = load_tokenizer("builtin:tiny-qwen3")
            source = StoreDataSource(store, tokenizer=lambda: tok)
            judged = len(store.turns(status=JUDGED))
            samples = {s.turn_id: s for s in source.take(judged)}
            assert {"s-feedback:0", "s-feedback:2"} <= set(samples)
            rated = samples["s-feedback:0"]
            assert rated.reward == -1.0 and rated.metadata["explicit_rating"] == -1
            j = rated.metadata["judgement"]
            assert j["judge_reward"] == 1.0 and j["hint"] == "Answer with the number only: 4."
            assert j["hint_source"] == "feedback" and j["branch"] == "both"
            assert "[Hint: Answer with the number only: 4.]" in tok.decode(j["teacher_prompt_ids"])
            assert samples["s-feedback:2"].reward == 1.0
            source.mark_trained(list(samples.values()), step=0)
            assert store.get_turn(store.turns("s-feedback")[0].id).status == TRAINED

            # rating a trained turn: stored and counted, never trained again
            r = _post(server, {"id": ids[2], "rating": -1})
            assert r.status_code == 200 and r.json()["after_training"] is True and "already trained" in r.json()["note"]
            with pytest.raises(RolloutTimeout):
                source.take(1, timeout_s=1)
            assert store.get_turn(store.turns("s-feedback")[2].id).status == TRAINED
        finally:
            store.close()

        listed = httpx.get(_root(server) + "/admin/feedback", headers=AUTH).json()
        s = listed["summary"]
        # turn 0: -1 (judge +1); turn 2: re-rated -1 after training (judge +1); turn 1's was undone
        assert (s["total"], s["negative"], s["applied"], s["after_training"]) == (2, 2, 2, 1)
        assert (s["judge_agree"], s["judge_disagree"], s["judge_agreement"]) == (0, 2, 0.0)
        assert [d["turn_id"] for d in listed["data"]] == ["s-feedback:2", "s-feedback:0"]
        metrics = httpx.get(_root(server) + "/metrics").text
        assert 'openclaw_feedback{kind="judge_disagree"} 2.0' in metrics
