"""The main job's parts (``openclaw_rl.main_job``): the question split, the paired statistics, the
held-out measurement's fixed seeds, and the simulated user giving every main turn a next state,
joined back to the store and scored against the user's truth."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from fractions import Fraction

import pytest

from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.evaluation.stats import mcnemar_exact
from openclaw_rl.judges.lexical import lexical_verdict
from openclaw_rl.main_job.heldout import compare, measure
from openclaw_rl.main_job.questions import question_sets
from openclaw_rl.main_job.report import joined_turns, judge_report, per_version
from openclaw_rl.main_job.run import (DEFAULT_BATCH_SIZE, DEFAULT_STEPS, HISTORY_BATCH_SIZE, parse_main_args,
                                      report_lines, trainer_argv)
from openclaw_rl.main_job.user import UserDriver
from openclaw_rl.preferences import DEFAULT_PREFERENCE, get_preference
from tests.support.processes import descendants, kill_left_over, still_running


def test_held_out_questions_are_never_training_questions():
    train, test = question_sets(40)
    assert (len(train), len(test)) == (115, 40)
    assert len({q.id for q in test}) == 40 and not {q.id for q in train} & {q.id for q in test}
    _, whole_pool = question_sets(65)
    assert not {q.id for q in train} & {q.id for q in whole_pool}
    assert [q.source for q in test[:5]] == ["mt-bench"] * 3 + ["gsm8k"] * 2
    assert question_sets(40) == (train, test)  # a fixed order
    for bad in (0, 66):
        with pytest.raises(ValueError, match="--held-out must be between 1 and 65"):
            question_sets(bad)


def _binomial_p(b: int, c: int) -> float:
    """Two-sided exact binomial p of ``b`` vs ``c`` discordant pairs, by summing every outcome at
    most as likely as the observed one (the textbook definition; equal to doubling the smaller tail
    for p = 1/2)."""
    n = b + c
    pmf = [Fraction(math.comb(n, k), 2 ** n) for k in range(n + 1)]
    return float(min(1, sum(p for p in pmf if p <= pmf[b])))


@pytest.mark.parametrize("b, c", [(28, 0), (3, 1), (7, 2), (5, 5), (0, 4), (1, 0)])
def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_pairs(b, c):
    concordant = {f"s{i}": (True, True) for i in range(4)} | {f"f{i}": (False, False) for i in range(3)}
    pairs = concordant | {f"b{i}": (False, True) for i in range(b)} | {f"c{i}": (True, False) for i in range(c)}
    res = mcnemar_exact({k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()})
    assert (res["n"], res["improved"], res["worsened"]) == (len(pairs), b, c)
    assert res["p_value"] == pytest.approx(_binomial_p(b, c), rel=1e-12)
    assert mcnemar_exact({"q": True}, {"q": True})["p_value"] == 1.0


def test_compare_is_paired_on_the_same_questions():
    before = {"rate": 0.25, "satisfied": {"a": False, "b": False, "c": True, "d": False}}
    after = {"rate": 0.75, "satisfied": {"a": True, "b": True, "c": True, "d": False}}
    res = compare(before, after)
    assert res["delta"] == pytest.approx(0.5)
    low, high = res["delta_ci95"]
    # t interval of the differences [1, 1, 0, 0]: mean 0.5, sd 0.577, t(3, 0.975) = 3.182
    assert (low, high) == pytest.approx((0.5 - 3.1824 * 0.57735 / 2, 0.5 + 3.1824 * 0.57735 / 2), abs=1e-3)
    assert res["mcnemar"] == {"n": 4, "improved": 2, "worsened": 0, "p_value": 0.5}


def test_held_out_replies_are_fixed_by_their_seeds(tiny_server):
    """The same questions on the same weights give the same replies (side turns, seed per question)."""
    base = tiny_server.base_url.rsplit("/v1", 1)[0]
    _, test = question_sets(3)
    pref = get_preference(DEFAULT_PREFERENCE)
    store = TrajectoryStore(tiny_server.buffer_dir)
    mains_before = sum(t.turn_type == "main" for t in store.turns())
    one = measure(base, tiny_server.api_key, test, pref, 6, model="x")
    two = measure(base, tiny_server.api_key, test, pref, 6, model="x", concurrency=1)
    assert one["replies"] == two["replies"] and one["n"] == 3
    assert compare(one, two)["delta"] == 0.0 and compare(one, two)["mcnemar"]["p_value"] == 1.0
    assert sum(t.turn_type == "main" for t in store.turns()) == mains_before  # never trained
    store.close()


def test_every_main_turn_of_the_simulated_user_gets_its_reaction_as_next_state(tiny_server):
    base = tiny_server.base_url.rsplit("/v1", 1)[0]
    train, _ = question_sets(40)
    pref = get_preference(DEFAULT_PREFERENCE)
    driver = UserDriver(base, tiny_server.api_key, train[:3], pref, max_tokens=6, concurrency=1).start()
    deadline = time.time() + 300
    while driver.sessions < 2 and time.time() < deadline:
        time.sleep(0.2)
    driver.stop()
    assert driver.failed == 0 and driver.sessions >= 2 and len(driver.truth) == 2 * driver.sessions
    store = TrajectoryStore(tiny_server.buffer_dir)
    mine = {r.session_id for r in driver.truth}
    for sid in mine:
        turns = store.turns(session_id=sid)
        mains = [t for t in turns if t.turn_type == "main"]
        reactions = [r.reaction for r in sorted(driver.truth, key=lambda r: r.index) if r.session_id == sid]
        assert [t.next_state for t in mains] == reactions  # the last reply's reaction included
        assert turns[-1].turn_type == "side"  # the closing request carried the last reaction
    rows, unmatched = joined_turns(store, driver.truth)
    assert unmatched == 0 and len(rows) == len(driver.truth)
    def asked(session_id: str) -> str:  # session i asks question i mod 3 (the driver cycles through them)
        return train[int(session_id.removeprefix("user-")) % 3].text

    assert [rec.satisfied for _, _, rec in rows] == [pref.satisfied(rec.reply, asked(rec.session_id), cut=rec.cut)
                                                     for _, _, rec in rows]
    # the user saw the finish reason: a reply that filled the 6-token budget is cut, one that ended earlier is not
    assert all(len(t.response_ids) == 6 for t, _, rec in rows if rec.cut)
    assert all(len(t.response_ids) <= 6 for t, _, rec in rows)
    # scored with the lexical PRM's verdicts on the recorded next states: it agrees with the truth
    judged = [(t, {"verdict": lexical_verdict(t.next_state, "user"), "mode": "lexical"}, rec) for t, _, rec in rows]
    report = judge_report(judged, pref.hint_terms)
    assert report["prm"]["accuracy"] == 1.0 and report["prm"]["n"] == len(rows) and report["next_state_share"] == 1.0
    assert sum(v["n"] for v in per_version(judged).values()) == len(rows)
    store.close()


def test_main_job_flags_and_trainer_command_line():
    a = parse_main_args([])
    assert (a.method, a.preference, a.steps, a.batch_size, a.held_out, a.lr, a.kl_coef) == \
        ("combine", DEFAULT_PREFERENCE, DEFAULT_STEPS, DEFAULT_BATCH_SIZE, 40, 1e-3, 0.02)
    assert (DEFAULT_STEPS, DEFAULT_BATCH_SIZE) == (18, 24)  # measured: docs/learning.md, "Fewer, larger steps"
    history = parse_main_args(["--history-first"])
    assert (history.steps, history.batch_size) == (0, HISTORY_BATCH_SIZE)
    assert parse_main_args(["--batch-size", "4"]).batch_size == 4
    argv = trainer_argv(a, "http://127.0.0.1:1", Path("/tmp/x"))
    assert argv[argv.index("--advantage-estimator") + 1] == "combine"
    assert argv[argv.index("--truncated-replies") + 1] == "train"
    assert argv[argv.index("--sample-order") + 1] == "newest"
    assert argv[argv.index("--kl-loss-coef") + 1] == "0.02"
    from slime.config.run_args import parse_run_args
    cfg = parse_run_args(argv)
    assert (cfg.num_rollout, cfg.rollout_batch_size, cfg.truncated_replies) == (DEFAULT_STEPS, DEFAULT_BATCH_SIZE, "train")
    assert (cfg.combine_rl_baseline, cfg.combine_w_opd, cfg.combine_w_rl) == ("batch-mean", 0.1, 1.0)
    with pytest.raises(SystemExit):
        parse_main_args(["--steps", "0"])


def test_the_report_says_what_the_gate_and_the_collapse_guard_did():
    """The last lines of ``make run``: the collapse run of docs/learning.md (lr 0.1) skipped its
    first step, rolled back at its second and the gate rejected two versions."""
    rate = {"rate": 0.0, "ci95": [0.0, 0.0]}
    quality = {"over_application": rate, "distinct_pairs": {"mean": 0.987}, "words": {"mean": 20.4}}
    event = ("collapse guard: 2 spikes in the last 2 steps at step 2 (last: update_kl 3.933 vs baseline 0.5 "
             "(x7.87)): rolled back to initial (weights and optimizer state) as weight version 1; lr 0.1 -> 0.05")
    result = {"satisfaction_before": 0.325, "satisfaction_after": 0.325, "mcnemar": {"p_value": 1.0},
              "quality": {"before": quality, "after": quality}, "reference_nll": {"rise": 0.0},
              "promotion_gate": {"mode": "enforce"},
              "gate_versions": [{"version": 1, "step": 2, "passed": True, "failed": []},
                                {"version": 2, "step": 3, "passed": False,
                                 "failed": ["reference NLL up +60.3% over the start > 5%"]}],
              "guard": {"skipped_steps": [1, 2], "events": [event]}}
    lines = report_lines(result)
    assert "promotion gate (enforce): 1 of 2 versions passed" in lines
    assert "  version 2 (step 3) rejected: reference NLL up +60.3% over the start > 5%" in lines
    assert lines[-2:] == ["collapse guard: steps 1, 2 skipped", "  " + event]
    assert not any("collapse guard" in line for line in report_lines({**result, "guard": None}))


REPO = Path(__file__).resolve().parents[1]


def _job_log(out: Path) -> str:
    """The end of the main job's ``run.log`` under ``out`` (its stderr goes there, not to the pipe)."""
    return "".join(p.read_text()[-3000:] for p in out.glob("*/run.log"))


@pytest.mark.ray
@pytest.mark.parametrize("phase", ["server starting"])
def test_sigterm_stops_the_server_and_ray_the_main_job_started(tmp_path, phase):
    """``kill <pid>`` of ``make run`` while its server starts: exit 143 with one line, and the
    policy server it started is stopped, not left running without it (before, Python's default
    SIGTERM ended the job at once and the server outlived it). While the trainer runs, Ray's
    handlers take over SIGTERM (``slime.orchestration.ray_actors._python_sigterm_handler_back``); that phase
    ("training": wait for ``ray::TrainActor``) exits 1 instead of 143 and is not asserted yet."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "SLIME_CALLER_CWD", "HISTORY_PATH")}
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_rl.main_job", "--method", "rl", "--model-path",
                             "builtin:tiny-qwen3", "--steps", "50", "--batch-size", "2", "--held-out", "2",
                             "--max-tokens", "4", "--eval-max-tokens", "4", "--prm-mode", "lexical",
                             "--promotion-gate", "off", "--gate-holdout-every", "0", "--out", str(tmp_path)],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started: list[int] = []
    try:
        deadline = time.time() + 600
        wanted = b"ray::TrainActor" if phase == "training" else b"openclaw_rl.server"  # actors: the driver is connected
        while not any(wanted in Path(f"/proc/{p}/cmdline").read_bytes() for p in descendants(proc.pid)
                      if Path(f"/proc/{p}/cmdline").exists()):
            assert proc.poll() is None and time.time() < deadline, _job_log(tmp_path)
            time.sleep(0.5)
        started = descendants(proc.pid)
        assert any(b"openclaw_rl.server" in Path(f"/proc/{p}/cmdline").read_bytes() for p in started
                   if Path(f"/proc/{p}/cmdline").exists()), "the job serves the policy from a child process"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 143, f"exit {proc.returncode}\n" + out[-3000:] + _job_log(tmp_path)
        assert "[main job] terminated: stopped the server, Ray and the simulated users it started" in out
        assert still_running(started) == [], "left running after the job ended"
    finally:  # whatever is left, by pid (the test must not leak a server or a Ray cluster)
        kill_left_over(proc, started)


def test_per_version_counts_first_replies_and_retries_apart():
    from types import SimpleNamespace

    from openclaw_rl.main_job.user import TruthRecord

    def row(v, index, ok, cut=False):
        return SimpleNamespace(weight_version=v), {"verdict": 1 if ok else -1}, TruthRecord("s", index, "r", ok, "x", cut)

    rows = [row(0, 0, False, cut=True), row(0, 0, True), row(0, 1, True), row(0, 1, True), row(1, 0, False)]
    out = per_version(rows)
    assert out[0]["n"] == 4 and out[0]["satisfaction"] == 0.75 and out[0]["cut"] == 0.25
    assert out[0]["first_reply"] == 0.5 and out[0]["retry"] == 1.0 and out[0]["prm_agreement"] == 1.0
    assert out[1]["first_reply"] == 0.0 and out[1]["retry"] is None
