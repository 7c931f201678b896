"""The dashboard in a real browser (Debian's chromium driven by Playwright): a person rates a turn
-1 where the judge said +1 and the trained sample's reward is then negative; deletes a lesson and
it is no longer the hint; forgets a conversation and its unique text is then in no file of the
buffer folder; rolls back a version and the server answers from it; the training table follows
the run's metrics as they are logged. A screenshot of each page is saved (``screens/`` under the
test's temporary folder)."""

from __future__ import annotations

import shutil

import httpx
import pytest

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.models import load_tokenizer
from openclaw_rl.rollout.data_source import StoreDataSource
from slime.monitor import MetricsLogger
from tests.support.control import AUTH, converse, files_containing, judge_all, perturbed_copy
from tests.support.server import running_server

playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")
UNIQUE = "okapi-tundra-5521 is my locker code"
PRAISE = "Perfect, thank you, that is exactly right!"


def _greedy(root: str) -> str:
    r = httpx.post(root + "/v1/chat/completions", headers=AUTH, timeout=120,
                   json={"messages": [{"role": "user", "content": "same prompt"}], "max_tokens": 8, "temperature": 0,
                         "session_id": "greedy"})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


def _take(buf, uid: str):
    """The sample the data source builds now for turn ``uid`` (claims every judged turn, gives the
    others back)."""
    store = TrajectoryStore(buf)
    try:
        tok = load_tokenizer("builtin:tiny-qwen3")
        source = StoreDataSource(store, tokenizer=lambda: tok)
        samples = source.take(len(store.turns(status="judged")))
        source.release(samples)
        return next(s for s in samples if s.turn_id == uid)
    finally:
        store.close()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is installed by `make install`")
def test_dashboard_rate_lesson_forget_rollback(tmp_path):
    buf, logs, screens = tmp_path / "rl_buffer", tmp_path / "logs", tmp_path / "screens"
    screens.mkdir()
    v1 = perturbed_copy(tmp_path / "v1", seed=3)
    metrics = MetricsLogger(logs, "run-test")
    with running_server("builtin:tiny-qwen3", buf, "--metrics-dir", str(logs)) as server:
        root = server.base_url.rsplit("/v1", 1)[0]
        converse(server, "s-praise", ["What is two plus two?", PRAISE, "ok"])
        converse(server, "s-lesson", ["Bonjour!", "No, that's wrong. You should answer in French.", "ok"])
        converse(server, "s-forget", [f"Remember: {UNIQUE}.", PRAISE, "ok"])
        assert judge_all(buf) == 6
        text0 = _greedy(root)
        metrics.log(1, {"reward/mean": 0.5, "train/loss": 0.12, "train/approx_kl": 0.001, "weight_version": 1,
                        "gate/passed": 1.0})
        r = httpx.post(root + "/admin/update_weights_from_disk", headers=AUTH, timeout=120,
                       json={"model_path": str(v1), "weight_version": 1, "gate": {"gate/passed": 1.0}})
        assert r.status_code == 200, r.text
        assert _greedy(root) != text0

        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("dialog", lambda d: d.accept())
            page.goto(f"{root}/dashboard?key=sk-test")
            page.wait_for_selector("body[data-loaded='1']")
            row = page.locator("tr[data-turn='s-praise:0']")
            assert row.locator(".judge-vote").inner_text() == "+1"  # the judge's vote
            page.screenshot(path=screens / "conversations.png", full_page=True)

            # rate -1 where the judge said +1: the trained sample's reward is negative
            row.locator(".rate-down").click()
            page.wait_for_function("document.querySelector(\"tr[data-turn='s-praise:0'] .rating\")"
                                   ".innerText.startsWith('-1')")
            sample = _take(buf, "s-praise:0")
            assert sample.reward == -1.0 and sample.metadata["judgement"]["judge_reward"] == 1.0

            # a lesson: shown, deleted, no longer the hint
            page.goto(f"{root}/dashboard?key=sk-test#lessons")
            page.wait_for_selector("tr[data-lesson]")
            assert page.locator("tr[data-lesson] .lesson-text").input_value() == "You should answer in French."
            assert _take(buf, "s-lesson:0").metadata["judgement"]["hint_accepted"] is True
            page.screenshot(path=screens / "lessons.png", full_page=True)
            page.locator("tr[data-lesson] .lesson-delete").click()
            page.wait_for_selector("tr[data-lesson]", state="detached")
            j = _take(buf, "s-lesson:0").metadata["judgement"]
            assert j["hint_deleted"] is True and "teacher_prompt_ids" not in j

            # forget a conversation: its unique text is in no file of the buffer folder
            page.goto(f"{root}/dashboard?key=sk-test#conversations")
            page.wait_for_selector("div[data-session='s-forget']")
            assert files_containing(buf, UNIQUE)
            page.locator("div[data-session='s-forget'] .forget").click()
            page.wait_for_selector("div[data-session='s-forget']", state="detached")
            assert files_containing(buf, UNIQUE) == [] and files_containing(buf, "okapi-tundra-5521") == []
            assert page.locator("div[data-session='s-praise']").count() == 1

            # the training table follows the run live
            page.goto(f"{root}/dashboard?key=sk-test#training")
            page.wait_for_selector("#training-table tbody tr")
            metrics.log(2, {"reward/mean": -0.25, "train/loss": 0.08, "train/approx_kl": 0.002, "weight_version": 2,
                            "gate/passed": 0.0})
            page.wait_for_function("document.querySelectorAll('#training-table tbody tr').length === 2")
            assert "FAIL" in page.locator("#training-table tbody tr").first.inner_text()
            page.screenshot(path=screens / "training.png", full_page=True)

            # roll back a version: the server answers from it
            page.goto(f"{root}/dashboard?key=sk-test#versions")
            page.wait_for_selector("tr[data-version='0'] .rollback")
            page.screenshot(path=screens / "versions.png", full_page=True)
            page.locator("tr[data-version='0'] .rollback").click()
            page.wait_for_selector("body[data-serving='0']")
            assert httpx.get(root + "/healthz").json()["weight_version"] == 0
            assert _greedy(root) == text0

            page.goto(f"{root}/dashboard?key=sk-test#storage")
            page.wait_for_selector("#storage-files tbody tr")
            assert "trajectories.sqlite" in page.locator("#storage-files").inner_text()
            page.screenshot(path=screens / "storage.png", full_page=True)
            # without the key, from this machine but with the server's API key unset in the request: 401
            assert httpx.get(root + "/dashboard").status_code == 401
            browser.close()
    metrics.close()
    assert sorted(p.name for p in screens.iterdir()) == ["conversations.png", "lessons.png", "storage.png",
                                                         "training.png", "versions.png"]
