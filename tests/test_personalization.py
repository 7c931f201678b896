"""The personalization benchmark (``openclaw_rl.personalization``): sessions to stable against
hand-made pass sequences, each persona's rule against hand-checked replies, the pacing condition,
the table's numbers on hand-made runs, and one short run on the tiny model end to end."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from openclaw_rl.capture.lessons import LESSONS_HEADER
from openclaw_rl.capture.store import TrajectoryStore
from openclaw_rl.cli import main as cli_main
from openclaw_rl.main_job.run import trainer_argv
from openclaw_rl.personalization.cli import main, parse_bench_args
from openclaw_rl.personalization.pacing import Pacer
from openclaw_rl.personalization.personas import (PAPER_PERSONAS, PERSONAS, ReplyBudget, get_persona,
                                                  register_persona, ta_min_tokens)
from openclaw_rl.personalization.report import JOINT, aggregate, comparisons, table_lines
from openclaw_rl.personalization.run import job_args
from openclaw_rl.personalization.stability import sessions_to_stable
from openclaw_rl.preferences import PREFERENCES
from slime.omp import usable_cores

REPO = Path(__file__).resolve().parent.parent
WORDS = ReplyBudget(32, lambda text: len(text.split()))  # one "token" per word, for hand counting


# ---------------------------------------------------------------- sessions to stable

def test_never_stable_counts_as_n_and_says_so():
    s = sessions_to_stable([False, True, True, False, True, True, False, False])
    assert (s.sessions, s.reached, s.n) == (8, False, 8)
    assert s.text() == "not reached within 8 (counted 8)"
    assert sessions_to_stable([False] * 5).sessions == 5


def test_stable_from_the_first_session_is_three():
    s = sessions_to_stable([True] * 10)
    assert (s.sessions, s.reached, s.relapses) == (3, True, 0) and s.text() == "3"


def test_a_relapse_does_not_undo_the_first_streak():
    # passes at 2, 3 (broken at 4), then 5, 6, 7: stable after session 7; then 2 misses of 3
    s = sessions_to_stable([False, True, True, False, True, True, True, False, True, False])
    assert (s.sessions, s.reached, s.relapses) == (7, True, 2)


def test_streak_ending_on_the_last_session_counts_as_reached():
    s = sessions_to_stable([False, False, True, True, True])
    assert (s.sessions, s.reached) == (5, True) and s.text() == "5"


def test_bad_sequences_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        sessions_to_stable([])
    with pytest.raises(ValueError, match="streak"):
        sessions_to_stable([True], streak=0)
    assert sessions_to_stable([False, True], streak=1).sessions == 2


# ---------------------------------------------------------------- persona rules

ARITH = "Tom has 3 apples and buys 4 more apples. How many apples does Tom have?"


@pytest.mark.parametrize("reply, ok", [
    ("Tom starts with 3 apples and buys 4 more apples, so he has 7 apples now.", True),
    ("Tom has **7 apples** in the end, since 3 plus 4 apples is 7.", False),           # bold
    ("1. Tom has 3 apples.\n2. He buys 4 more apples.\nSo Tom has 7 apples.", False),  # numbered list
    ("Tom has 3 + 4 = 7 apples, so the answer is $\\boxed{7}$ apples.", False),       # boxed answer
    ("- Tom has 3 apples\n- he buys 4 more apples, so 7 apples.", True),               # bullets are not numbered
    ("In 2024 Tom had 3 apples and bought 4 apples; 7 apples in all.", True),          # a year is no list
])
def test_student_rule(reply, ok):
    assert get_persona("student", WORDS).passes(reply, ARITH) is ok


def test_ta_rule_counts_tokens_against_the_scaled_threshold():
    assert ta_min_tokens(32) == 16 and ta_min_tokens(200) == 100 and ta_min_tokens(4096) == 100
    ta = get_persona("ta", WORDS)
    assert "more than 16 tokens" in ta.rule and "scaled" in ta.rule
    assert get_persona("ta", ReplyBudget(512, WORDS.count_tokens)).rule == "more than 100 tokens"
    q = "What makes a good apple pie recipe for beginners?"
    base = "A good apple pie for beginners needs tart apples, a buttery crust, some sugar and cinnamon"  # 16 words
    assert ta.passes(base + ".", q) is False   # 16 words: not more than 16
    assert ta.passes(base + " mixed.", q) is True    # 17 words
    assert ta.passes("Apples.", q) is False


@pytest.mark.parametrize("reply, ok", [
    ("Well done for asking! Tom has 3 apples plus 4 apples, so 7 apples.", True),
    ("Great job working on this: Tom ends up with 7 apples.", True),
    ("You've got this! 3 apples and 4 apples make 7 apples for Tom.", True),
    ("Tom has 7 apples because 3 plus 4 is 7.", False),
    ("This was not done well: Tom has 7 apples.", False),  # "done well" is not "well done"
])
def test_teacher_rule(reply, ok):
    assert get_persona("teacher", WORDS).passes(reply, ARITH) is ok


@pytest.mark.parametrize("name", PAPER_PERSONAS)
def test_a_degenerate_reply_fails_every_paper_persona_like_the_main_jobs_user(name):
    """slime.guards.behaviour problems (a repetition loop, one word again and again) and a reply that
    leaves the question are rejected whatever the rule says, as Preference.satisfied does."""
    p = get_persona(name, WORDS)
    loop = "Well done! Tom has apples and more apples. " * 12
    assert p.preference.check(loop)  # it meets the letter of every rule
    assert p.passes(loop, ARITH) is False
    assert p.passes("Well done!", ARITH) is False  # no answer
    assert p.passes("Well done, the weather in Paris is lovely this spring and summer for a long walk.",
                    ARITH) is False  # off the question


def test_why_a_first_reply_missed_follows_the_users_reaction():
    """The report's reasons, hand-checked: the rule first (the user restates it, cut or not), then
    what a person rejects in a reply that meets it; None for a pass."""
    student, teacher = get_persona("student", WORDS), get_persona("teacher", WORDS)
    plain = "Tom starts with 3 apples and buys 4 more apples, so he has 7 apples now."
    assert student.miss_reason(plain, ARITH) is None and student.passes(plain, ARITH)
    assert student.miss_reason(plain, ARITH, cut=True) == "cut_off" and not student.passes(plain, ARITH, cut=True)
    assert student.miss_reason("Tom has **7 apples** since 3 plus 4 apples is 7.", ARITH, cut=True) == "rule"
    assert teacher.miss_reason(plain, ARITH, cut=True) == "rule"  # no warm phrase: that is what the user says
    assert teacher.miss_reason("Well done, the weather in Paris is lovely this spring for a walk.", ARITH) == "no_answer"
    assert teacher.miss_reason("Well done! Tom has apples and more apples. " * 12, ARITH) == "over_application"
    assert student.miss_reason("  ", ARITH) == "empty"


def test_project_preferences_are_personas_with_their_own_rule():
    assert set(PREFERENCES) <= set(PERSONAS) and set(PAPER_PERSONAS) <= set(PERSONAS)
    alex = get_persona("name-alex", WORDS)
    assert alex.preference is PREFERENCES["name-alex"] and alex.source is None
    assert alex.passes("Alex, Tom has 7 apples because 3 apples and 4 apples make 7.", ARITH)
    assert not alex.passes("Tom has 7 apples because 3 apples and 4 apples make 7.", ARITH)


def test_registry_errors():
    with pytest.raises(KeyError, match="unknown persona 'nobody'.*student"):
        get_persona("nobody", WORDS)
    with pytest.raises(ValueError, match="already registered"):
        register_persona("ta", PERSONAS["ta"])


# ---------------------------------------------------------------- pacing

def test_pacing_waits_for_the_trainer_to_take_every_full_batch(tmp_path):
    train = Pacer(tmp_path, "train", batch_size=4, counted=10)
    assert train.caught_up({"skipped": 3, "trained": 8, "claimed": 3})      # waiting for a 4th turn
    assert not train.caught_up({"claimed": 4})                               # in a step
    assert not train.caught_up({"judged": 1, "claimed": 0})                  # not taken yet
    assert not train.caught_up({"ready": 1})                                 # not judged yet
    judge = Pacer(tmp_path, "judge", batch_size=4, counted=10)
    assert judge.caught_up({"judged": 40}) and not judge.caught_up({"judging": 1})
    with pytest.raises(ValueError, match="pacing mode"):
        Pacer(tmp_path, "fast", 4, 10)


# ---------------------------------------------------------------- the table

def _run(method: str, seed: int, curves: dict[str, list[int]]) -> dict:
    per = {}
    for name, c in curves.items():
        s = sessions_to_stable([bool(x) for x in c])
        per[name] = {"rule": f"rule of {name}", "curve": c, "heldout": None,
                     "stable": {"sessions": s.sessions, "reached": s.reached, "n": s.n, "relapses": s.relapses,
                                "text": s.text()}}
    return {"method": method, "seed": seed, "sessions": 6, "streak": 3, "personas": per}


def test_table_means_intervals_and_significance_on_hand_made_runs():
    runs = [_run("none", seed, {"ta": [0] * 6, "teacher": [0, 1, 0, 0, 1, 0]}) for seed in (1, 2, 3)]
    runs += [_run("combine", 1, {"ta": [0, 1, 1, 1, 1, 1], "teacher": [1, 1, 1, 1, 1, 1]}),   # 4 and 3
             _run("combine", 2, {"ta": [0, 1, 1, 1, 1, 0], "teacher": [1, 1, 1, 0, 1, 1]}),   # 4 (a relapse), 3
             _run("combine", 3, {"ta": [1, 1, 1, 1, 1, 1], "teacher": [0, 1, 1, 1, 1, 1]})]   # 3 and 4
    agg = aggregate(runs)
    assert agg["none"]["ta"]["values"] == [6, 6, 6] and agg["none"]["ta"]["reached"] == 0
    assert agg["combine"]["ta"]["mean"] == pytest.approx(11 / 3) and agg["combine"]["ta"]["reached"] == 3
    # t interval of [4, 4, 3]: sd sqrt(1/3), t(2) = 4.303
    half = 4.3027 * math.sqrt(1 / 3) / math.sqrt(3)
    assert agg["combine"]["ta"]["ci95"] == pytest.approx([11 / 3 - half, 11 / 3 + half], abs=1e-3)
    assert agg["combine"][JOINT]["values"] == [3.5, 3.5, 3.5]
    assert agg["combine"]["teacher"]["pass_rate"] == pytest.approx(16 / 18)
    by = {(c["persona"], c["a"], c["b"]): c for c in comparisons(runs)}
    ta = by[("ta", "combine", "none")]
    assert ta["delta"] == pytest.approx(7 / 3)  # none minus combine, paired by seed: 2, 2, 3
    assert ta["significant_sessions"]  # t interval 2.33 +/- 1.43 excludes 0
    assert ta["mcnemar"]["improved"] == 0 and ta["mcnemar"]["worsened"] == 15 and ta["significant_first_replies"]
    teacher = by[("teacher", "combine", "none")]  # 3, 3, 2 sessions apart; 2 vs 16 passes of 18
    assert teacher["delta"] == pytest.approx(8 / 3)
    assert (teacher["mcnemar"]["improved"], teacher["mcnemar"]["worsened"]) == (0, 10)
    lines = table_lines(runs)
    assert any(line.startswith("| combine | ta | 3.7 [2.2, 5.1] | 3 (3) | 4, 4, 3 | 0.83 |") for line in lines)
    assert any(line.startswith("| none | ta | 6.0 [6.0, 6.0] | 3 (0) | >6, >6, >6 | 0.00 |") for line in lines)
    assert any(line.startswith("- ta: none - combine = 2.3 sessions [0.9, 3.8], McNemar p = ") for line in lines)
    assert "not reached within 6 counts as 6 in the mean and shows as >6" in lines[0]


def test_the_table_says_why_first_replies_missed():
    """Shares of all first replies over the seeds and personas, most first; '-' for runs that did not
    record why (files from before the column)."""
    runs = [_run("none", seed, {"ta": [0] * 6, "teacher": [0, 1, 0, 0, 0, 0]}) for seed in (1, 2)]
    for r, (ta, teacher) in zip(runs, [({"cut_off": 4, "rule": 2}, {"rule": 5}),
                                       ({"cut_off": 6}, {"rule": 4, "no_answer": 1})]):
        r["personas"]["ta"]["misses"], r["personas"]["teacher"]["misses"] = ta, teacher
    agg = aggregate(runs)["none"]
    assert agg["ta"]["misses"] == {"cut_off": 10 / 12, "rule": 2 / 12}
    assert agg["teacher"]["misses"] == {"rule": 9 / 12, "no_answer": 1 / 12}
    assert agg[JOINT]["misses"] == {"rule": 11 / 24, "cut_off": 10 / 24, "no_answer": 1 / 24}
    lines = table_lines(runs)
    assert any(line.startswith("| none | ta | 6.0 [6.0, 6.0] | 2 (0) | >6, >6 | 0.00 | cut_off 0.83, rule 0.17 |")
               for line in lines)
    assert any("| none | joint |" in line and "| rule 0.46, cut_off 0.42, no_answer 0.04 |" in line for line in lines)
    assert any(line.startswith("Most first replies were cut by the") and "(none ta: cut_off >= 50%" in line
               for line in lines)  # ta only: teacher's and joint's cut-off shares are below half
    assert lines[-1] == "- no significant difference"  # one method: nothing to compare
    old = table_lines([_run("rl", 1, {"ta": [1] * 6})])
    assert any(line.startswith("| rl | ta | 3.0 [-, -] | 1 (1) | 3 | 1.00 | - |") for line in old)


def test_one_seed_has_no_interval_but_mcnemar_still_speaks():
    runs = [_run("none", 1, {"ta": [0] * 6}), _run("rl", 1, {"ta": [1] * 6})]
    (c,) = [c for c in comparisons(runs) if c["persona"] == "ta"]
    assert math.isnan(c["ci95"][0]) and not c["significant_sessions"]
    assert c["mcnemar"]["p_value"] == pytest.approx(2 / 64) and c["significant"]


# ---------------------------------------------------------------- flags

def test_bench_flags():
    a = parse_bench_args(["--method", "combine,memory", "--persona", "ta,name-alex", "--seeds", "3"])
    assert a.methods == ["combine", "memory"] and a.personas == ["ta", "name-alex"] and a.seed_list == [1, 2, 3]
    assert parse_bench_args(["--seeds", "7,9"]).seed_list == [7, 9]
    assert parse_bench_args([]).personas == list(PAPER_PERSONAS)
    for bad in (["--method", "sft"], ["--persona", "nobody"], ["--sessions", "0"], ["--seeds", "x"]):
        with pytest.raises(SystemExit):
            parse_bench_args(bad)


@pytest.mark.parametrize("argv, says", [
    (["--method", "none,none"], "--method names none more than once"),
    (["--persona", "ta,teacher,ta"], "--persona names ta more than once"),
    (["--seeds", "1,2,1"], "--seeds names 1 more than once"),
    (["--seeds", "0"], "--seeds '0': a count >= 1"),
    (["--sessions", "2"], "fewer than 3 sessions can never get there"),
    (["--job-args", "--bogus-flag 1"], "--job-args '--bogus-flag 1': unrecognized arguments: --bogus-flag 1"),
    (["--job-args", "--lr abc"], "argument --lr: invalid float value: 'abc'"),
    (["--method", "none", "--trainer-args=--bogus-flag"], "unrecognized arguments: --bogus-flag"),
])
def test_bad_flags_are_one_line_errors_before_anything_runs(argv, says, capsys):
    """Duplicates, a run too short to ever be stable, and main-job or trainer flags that the runs
    would reject (checked for the baselines too), each a one-line argparse error; before, a bad
    --job-args printed only a usage block into bench.log after the server had started."""
    with pytest.raises(SystemExit) as e:
        parse_bench_args(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and says in err[-1] and err[-1].startswith("openclaw-rl bench personalization: error:")


def test_report_and_out_errors_name_the_file_or_folder(tmp_path, capsys):
    assert cli_main(["bench", "personalization", "--report", str(tmp_path / "nowhere")]) == 2
    assert "--report " + str(tmp_path / "nowhere") + ": no such folder" in capsys.readouterr().err
    (tmp_path / "bad" / "rl" / "seed-1").mkdir(parents=True)
    run_json = tmp_path / "bad" / "rl" / "seed-1" / "run.json"
    for text, says in (("{'method'", "not JSON"), ("{}", "not a personalization run (no method, seed, sessions, personas)"),
                       (json.dumps({**_run("rl", 1, {"ta": [1] * 6}), "personas": {"ta": {"curve": [1]}}}),
                        "not a personalization run (persona 'ta' has no stable")):
        run_json.write_text(text)
        assert cli_main(["bench", "personalization", "--report", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"openclaw-rl bench: error: {run_json}: {says}") and "\n" not in err, err
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert cli_main(["bench", "personalization", "--method", "none", "--out", str(blocked / "out")]) == 2
    assert f"--out {blocked / 'out'}: cannot make the run folder there" in capsys.readouterr().err


def test_paced_training_takes_every_core_unless_the_user_says_otherwise():
    """The users wait for each step, so the trainer gets every core it may use (the main job leaves
    the server one); the user's --trainer-args come last and win."""
    def threads(*argv: str) -> str:
        argv_ = trainer_argv(job_args(parse_bench_args(["--method", "rl", *argv]), "rl", 1), "http://x", Path("o"))
        return [argv_[i + 1] for i, f in enumerate(argv_) if f == "--train-threads"][-1]

    assert threads() == str(usable_cores())
    assert threads("--trainer-args", f"--train-threads {usable_cores() + 3}") == str(usable_cores() + 3)


def test_report_only_remakes_the_table_from_run_files(tmp_path, capsys):
    for i, run in enumerate([_run("none", 1, {"ta": [0] * 6}), _run("rl", 1, {"ta": [1] * 6})]):
        (tmp_path / f"a{i}").mkdir()
        (tmp_path / f"a{i}" / "run.json").write_text(json.dumps(run))
    assert main(["--report", str(tmp_path)]) == 0
    assert "| rl | ta | 3.0 [-, -] | 1 (1) | 3 | 1.00 |" in capsys.readouterr().out
    assert (tmp_path / "table.md").exists() and (tmp_path / "personalization.png").exists()
    (tmp_path / "a0" / "empty").mkdir()
    with pytest.raises(ValueError, match="no run.json"):
        main(["--report", str(tmp_path / "a0" / "empty")])


def test_openclaw_rl_bench_needs_a_benchmark_name(capsys):
    assert cli_main(["bench"]) == 2 and cli_main(["bench", "speed"]) == 2
    assert "usage: openclaw-rl bench personalization" in capsys.readouterr().err


# ---------------------------------------------------------------- end to end on the tiny model

def _bench(tmp_path: Path, *args: str) -> tuple[Path, subprocess.CompletedProcess]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "SLIME_CALLER_CWD")}
    env["PYTHON"] = sys.executable
    r = subprocess.run(["bash", "openclaw-test/run_personalization.sh",
                        "--model-path", "builtin:tiny-qwen3", "--max-tokens", "8", "--out", str(tmp_path / "out"),
                        "--server-timeout-s", "600",
                        *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (out,) = (tmp_path / "out").iterdir()
    return out, r


def _check_consistent(out: Path, method: str, persona: str, sessions: int) -> dict:
    """The files agree with each other and with the persona's rule applied to the recorded replies."""
    run = json.loads((out / method / "seed-1" / "run.json").read_text())
    rows = [json.loads(line) for line in (out / method / "seed-1" / "sessions.jsonl").read_text().splitlines()]
    assert [r["session"] for r in rows] == list(range(1, sessions + 1)) and {r["persona"] for r in rows} == {persona}
    assert not any(r["failed"] for r in rows) and run["failed_requests"] == 0
    p = get_persona(persona, ReplyBudget(8, lambda text: 0))  # name-alex's rule counts no tokens
    assert [p.passes(r["reply"], r["question"], cut=r["cut"]) for r in rows] == [bool(r["passed"]) for r in rows]
    assert [p.miss_reason(r["reply"], r["question"], cut=r["cut"]) for r in rows] == [r["miss"] for r in rows]
    per = run["personas"][persona]
    assert per["misses"] == dict(Counter(r["miss"] for r in rows if not r["passed"]).most_common())
    assert per["curve"] == [int(r["passed"]) for r in rows]
    expect = sessions_to_stable([bool(c) for c in per["curve"]])
    assert per["stable"]["sessions"] == expect.sessions and per["stable"]["reached"] == expect.reached
    assert per["pass_rate"] == pytest.approx(sum(per["curve"]) / sessions)
    assert set(per["heldout"]) >= {"before", "after", "delta", "mcnemar"} and per["heldout"]["mcnemar"]["n"] == 2
    results = json.loads((out / "results.json").read_text())
    agg = results["aggregate"][method][persona]
    assert agg["values"] == [expect.sessions] and agg["seeds"] == 1 and agg["reached"] == int(expect.reached)
    table = (out / "table.md").read_text()
    row = (f"| {method} | {persona} | {expect.sessions}.0 [-, -] | 1 ({int(expect.reached)}) | "
           f"{'' if expect.reached else '>'}{expect.sessions} |")
    assert row in table and "| joint |" not in table  # one persona: no joint row
    assert (out / "personalization.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return run


def test_memory_baseline_end_to_end_on_the_tiny_model(tmp_path):
    """One persona, the memory baseline, 4 sessions: the user's corrections are judged (OPD's hint
    judge, extractive), filed as lessons and injected into the served prompt of later sessions;
    nothing trains; the numbers in run.json, sessions.jsonl, results.json and table.md agree."""
    out, r = _bench(tmp_path, "--method", "memory", "--persona", "name-alex", "--sessions", "4", "--held-out", "2",
                    "--lessons", "2")
    run = _check_consistent(out, "memory", "name-alex", 4)
    assert run["steps"] == 0 and run["training_ended_by"] is None and run["pacing"]["mode"] == "judge"
    assert run["lessons"] >= 1 and run["pacing"]["timeouts"] == 0
    store = TrajectoryStore(out / "memory" / "seed-1" / "rl_buffer")
    later = [t for t in store.turns() if t.turn_type == "main" and t.session_id == "name-alex-3"]
    store.close()
    assert later and LESSONS_HEADER in later[0].prompt_text  # the lessons were in the last session's prompt
    assert "memory seed 1: name-alex " in r.stdout and "table:" in r.stdout


def test_the_untrained_floor_end_to_end_on_the_tiny_model(tmp_path):
    """``--method none``: the sessions run on the base model with nothing judged, trained or
    injected, and the files agree (the main job has no ``--method none``: the bench once passed it
    there and the floor never ran)."""
    out, r = _bench(tmp_path, "--method", "none", "--persona", "name-alex", "--sessions", "3", "--held-out", "2")
    run = _check_consistent(out, "none", "name-alex", 3)
    assert run["steps"] == 0 and run["lessons"] == 0 and run["pacing"]["mode"] == "none"
    assert "none seed 1: name-alex " in r.stdout and "table:" in r.stdout


@pytest.mark.ray
def test_binary_rl_trains_while_the_sessions_run_on_the_tiny_model(tmp_path):
    """One persona, Binary RL on Ray, 4 sessions of batch 2: sessions wait for the trainer, the
    trainer ends when the sessions do, at least one step is trained and published, and the files agree.
    A wait of 600 s for a full batch while users talk is a stall (a step of the tiny model takes
    seconds; the machine may be shared); once the sessions end, training ends when their turns are
    used up, not 600 s later."""
    out, _ = _bench(tmp_path, "--method", "rl", "--persona", "name-alex", "--sessions", "4", "--held-out", "2",
                    "--batch-size", "2", "--train-wait-s", "600",
                    "--job-args", "--prm-mode lexical --promotion-gate off --gate-holdout-every 0")
    run = _check_consistent(out, "rl", "name-alex", 4)
    assert run["training_ended_by"] == "sessions" and run["steps"] >= 1 and run["pacing"]["mode"] == "train"
    assert run["versions_published"] == run["steps"] and run["pacing"]["timeouts"] == 0
    assert run["wall_s"] < 600  # it did not wait out --train-wait-s after the last session
