"""Lessons on a real server: accepted hints (the real extractive hint judge) become
de-duplicated lessons with their source turns; ``GET/PATCH/DELETE /admin/lessons`` and
``openclaw-rl lessons``; a deleted lesson is no longer the hint of its turns' samples, an edited
one is; ``--inject-lessons N`` adds the top lessons to the served system prompt; bad input is a
clear 4xx."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from openclaw_rl.capture.lessons import LESSONS_HEADER, LESSONS_REFRESH_S
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.models import load_tokenizer
from openclaw_rl.rollout.data_source import StoreDataSource
from tests.support.control import AUTH, converse, judge_all
from tests.support.server import running_server


def test_lessons_listed_edited_deleted_and_injected(tmp_path):
    buf = tmp_path / "rl_buffer"
    with running_server("builtin:tiny-qwen3", buf, "--inject-lessons", "1") as server:
        root = server.base_url.rsplit("/v1", 1)[0]
        converse(server, "a", ["Bonjour, how are you?", "No, that's wrong. You should answer in French.", "ok"])
        converse(server, "b", ["Salut, ça va?", "no that is wrong. you should answer in French!", "ok"])
        converse(server, "c", ["What is 2+2?", "Wrong again. Always cite the source of a number.", "ok"])
        assert judge_all(buf) == 6
        lessons = httpx.get(root + "/admin/lessons", headers=AUTH).json()["data"]
        # one lesson for the two French hints (their text is the first judged of the two)
        french_text = lessons[0]["text"]
        assert french_text in ("You should answer in French.", "You should answer in French!")
        assert [(x["text"], x["turn_ids"]) for x in lessons] == [
            (french_text, ["a:0", "b:0"]), ("Always cite the source of a number.", ["c:0"])]
        french, cite = lessons[0]["id"], lessons[1]["id"]

        # --inject-lessons 1: the top lesson is in the served prompt (recorded token-exactly) once the
        # server re-read its lessons (the judge above wrote them from this process, not the server's)
        time.sleep(LESSONS_REFRESH_S + 0.5)
        converse(server, "d", ["Hello there"])
        store = TrajectoryStore(buf)
        served = store.turns("d")[0]
        assert served.messages[0] == {"role": "system", "content": f"{LESSONS_HEADER}\n- {french_text}"}
        assert french_text in served.prompt_text
        store.close()

        # edit (API) and delete (CLI); bad input
        r = httpx.patch(f"{root}/admin/lessons/{cite}", headers=AUTH, json={"text": "Cite where each number comes from."})
        assert r.status_code == 200 and r.json()["edited"] is True
        cli = subprocess.run([sys.executable, "-m", "openclaw_rl.cli", "lessons", "delete", str(french), "--url", root,
                              "--admin-api-key", "sk-test"], capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        assert cli.stdout.split() == [str(cite), "1", "turn(s)", *"Cite where each number comes from.".split()]
        for method, path, body, status, code in (
                ("DELETE", f"/admin/lessons/{french}", None, 404, "lesson_not_found"),  # a double delete
                ("DELETE", "/admin/lessons/9999", None, 404, "lesson_not_found"),
                ("PATCH", f"/admin/lessons/{french}", {"text": "x"}, 404, "lesson_not_found"),
                ("PATCH", f"/admin/lessons/{cite}", {"text": ""}, 400, "invalid_value"),
                ("PATCH", f"/admin/lessons/{cite}", {"words": "x"}, 400, "invalid_value"),
                ("DELETE", "/admin/lessons/abc", None, 400, "invalid_value")):
            r = httpx.request(method, root + path, headers=AUTH, json=body, timeout=60)
            assert r.status_code == status, (path, r.text)
            assert r.json()["error"]["code"] == code, r.text
        bad = subprocess.run([sys.executable, "-m", "openclaw_rl.cli", "lessons", "delete", str(french), "--url", root,
                              "--admin-api-key", "sk-test"], capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
        assert [x["id"] for x in httpx.get(root + "/admin/lessons", headers=AUTH).json()["data"]] == [cite]

        # the deleted lesson is no longer injected
        converse(server, "e", ["Hello again"])
        store = TrajectoryStore(buf)
        assert store.turns("e")[0].messages[0]["content"] == f"{LESSONS_HEADER}\n- Cite where each number comes from."

        # training: the deleted lesson is no hint any more, the edited one is the hint
        tok = load_tokenizer("builtin:tiny-qwen3")
        source = StoreDataSource(store, tokenizer=lambda: tok)
        samples = {s.turn_id: s for s in source.take(len(store.turns(status="judged")))}
        store.close()
    for uid in ("a:0", "b:0"):
        j = samples[uid].metadata["judgement"]
        assert j["hint_deleted"] is True and j["hint_accepted"] is False and "teacher_prompt_ids" not in j
        assert j["branch"] in ("rl", "none")
    j = samples["c:0"].metadata["judgement"]
    assert j["hint"] == "Cite where each number comes from." and j["hint_edited"] is True
    assert "[Hint: Cite where each number comes from.]" in tok.decode(j["teacher_prompt_ids"])
