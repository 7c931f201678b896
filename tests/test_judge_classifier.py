"""The ``classifier`` PRM mode: the build, the main job's feedback, other languages, tool calls."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from openclaw_rl.cli import main
from openclaw_rl.judges.classifier import (ClassifierBackend, classifier_path, featurize, load_classifier,
                                           train_classifier, training_examples)
from openclaw_rl.judges.feedback_corpus import LANGUAGES, generate, split
from openclaw_rl.judges.modes import build_backend, describe_prm_choice
from openclaw_rl.judges.prompts import JudgeInput, judge_input_for_turn
from openclaw_rl.judges.tool_signals import canonical_call, tool_verdict
from openclaw_rl.preferences import PREFERENCES, _quality_corrections
from slime.guards.behaviour import Problem


def _call(name, **args):
    return {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _verdict(backend, inp: JudgeInput) -> int:
    res = asyncio.run(backend.score_input(inp, 3))
    assert len(set(res.votes)) == 1 and abs(sum(res.probs.values()) - 1) < 1e-6
    return res.votes[0]


@pytest.fixture(scope="module")
def judge():
    return ClassifierBackend()


def test_corpus_is_multilingual_deterministic_and_holds_whole_families_back():
    a, b = generate(0), generate(0)
    assert a == b and {e.lang for e in a} == set(LANGUAGES) and {e.label for e in a} == {1, -1, 0}
    train, held = split(a)
    assert held and not {e.family for e in train} & {e.family for e in held}


def test_training_is_deterministic():
    rows = training_examples()[::8]
    one, two = train_classifier(rows), train_classifier(rows)
    assert (one.weight_D_C == two.weight_D_C).all() and (one.bias_C == two.bias_C).all()


def test_build_goes_into_the_model_cache_once(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RL_CACHE", str(tmp_path))
    path = classifier_path()
    assert str(path).startswith(str(tmp_path)) and not path.exists()
    clf = load_classifier()  # trains it now (seconds) and writes the cache file
    assert path.is_file() and load_classifier() is clf
    p = clf.probs("No, that's wrong.")
    assert max(p, key=p.get) == -1


@pytest.mark.parametrize("name", sorted(PREFERENCES))
def test_the_main_jobs_feedback_is_judged_right(judge, name):
    pref = PREFERENCES[name]
    for text in pref.corrections:
        assert _verdict(judge, JudgeInput("reply", text, "user", None, pref.instruction)) == -1, text
    for text in pref.praises:
        assert _verdict(judge, JudgeInput("reply", text, "user", None, pref.instruction)) == 1, text
    for problem in [*(p.value for p in Problem), "no_answer", "cut_off"]:  # a reply that keeps the rule but is unusable
        for text in _quality_corrections(problem, pref.over_terms):
            assert _verdict(judge, JudgeInput("reply", text, "user", None, pref.instruction)) == -1, text


@pytest.mark.parametrize("text", ["Nein, das ist falsch.", "No, eso está mal.", "Non, c'est faux.", "不对，错了。"])
def test_a_correction_in_another_language_is_minus_one(judge, text):
    assert _verdict(judge, JudgeInput("Paris is in Italy.", text, "user", None, "Where is Paris?")) == -1


def test_the_same_tool_call_again_is_minus_one_whatever_it_returned(judge):
    history = [{"role": "user", "content": "What's in notes.txt?"},
               {"role": "assistant", "content": "", "tool_calls": [_call("read_file", path="notes.txt")]},
               {"role": "tool", "content": "Buy milk."}]
    again = [{"type": "function", "function": {"name": "read_file", "arguments": '{ "path":"notes.txt" }'}}]
    assert canonical_call(again[0]) == canonical_call(history[1]["tool_calls"][0])  # same call, other spacing
    assert _verdict(judge, JudgeInput("", "Buy milk.", "tool", again, "What's in notes.txt?", history)) == -1
    other = [_call("read_file", path="todo.txt")]
    assert _verdict(judge, JudgeInput("", "Call Bob.", "tool", other, "And todo.txt?", history)) == 1


def test_the_same_read_after_an_edit_is_progress_not_a_loop():
    lint = _call("exec", command="ruff check src")
    history = [{"role": "user", "content": "Make the linter happy."},
               {"role": "assistant", "content": "", "tool_calls": [lint]},
               {"role": "tool", "content": "src/a.py:3:1: F401 `os` imported but unused\nFound 1 error."}]
    # nothing changed since: the same call can only say the same thing
    assert tool_verdict("Found 1 error.", [lint], "Make the linter happy.", history).verdict == -1
    for edit in (_call("str_replace_editor", path="src/a.py", old="import os\n", new=""),
                 _call("exec", command="sed -i '/^import os$/d' src/a.py")):
        fixed = history + [{"role": "assistant", "content": "", "tool_calls": [edit]},
                           {"role": "tool", "content": "ok"}]
        assert tool_verdict("All checks passed!", [lint], "Make the linter happy.", fixed).verdict == 1
        # and repeating it once more, with no edit in between, is a loop again
        again = fixed + [{"role": "assistant", "content": "", "tool_calls": [lint]},
                         {"role": "tool", "content": "All checks passed!"}]
        assert tool_verdict("All checks passed!", [lint], "Make the linter happy.", again).verdict == -1


def test_the_same_call_with_a_new_result_is_not_a_loop():
    ping = {"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": '{"url": "http://q/ready"}'}}
    history = [{"role": "user", "content": "The queue worker is stuck, get it going."},
               {"role": "assistant", "content": "", "tool_calls": [ping]},
               {"role": "tool", "tool_call_id": "c1", "content": "503 Service Unavailable: worker not ready"},
               {"role": "assistant", "content": "", "tool_calls": [_call("ops", action="kick", target="worker")]},
               {"role": "tool", "content": "done"}]
    again = [dict(ping, id="c2")]
    # "ops" says nothing of changing state, but the same call now answers differently: progress
    assert tool_verdict("200 OK: worker ready", again, "The queue worker is stuck.", history).verdict == 1
    # the same answer as before: nothing moved, a loop
    assert tool_verdict("503 Service Unavailable: worker not ready", again, "The queue worker is stuck.",
                        history).verdict == -1


@pytest.mark.parametrize("result", ['{"StackStatus": "UPDATE_IN_PROGRESS"}', "PENDING_REVIEW",
                                    'Waiting for rollout "api" to finish: 2 of 4 replicas updated'])
def test_status_constants_and_rollout_waits_are_pending(result):
    assert tool_verdict(result, [_call("exec", command="x")], "Deploy it.").verdict == 0
    assert tool_verdict("appending 12 rows to the sheet: done", [_call("exec", command="x")], "Add the rows.").verdict == 1


@pytest.mark.parametrize("result, expected", [
    ('{"error": null, "data": {"id": 7}}', 1),        # a JSON result's words are data: its fields decide
    ('{"errors": [], "items": [1, 2]}', 1),
    ('{"status": "fail", "reason": "quota"}', -1),
    ('{"statusCode": 403, "message": "Forbidden"}', -1),
    ('{"success": "false", "detail": "bad date"}', -1),
    ("running 2 tests\ntest a ... ok\ntest b ... ok\n\ntest result: ok. 2 passed; 0 failed", 1),  # cargo test
])
def test_json_fields_decide_a_json_result_and_a_test_run_is_not_pending(result, expected):
    assert tool_verdict(result, [_call("exec", command="x")], "Go ahead.").verdict == expected


def test_an_append_or_a_restart_changes_state_for_the_repeat_rule():
    for change in (_call("exec", command="printf '\\n' >> src/app.py"), _call("exec", command="sudo systemctl restart api"),
                   _call("restart_service", service="api")):
        check = _call("exec", command="make lint")
        history = [{"role": "user", "content": "Make lint pass."},
                   {"role": "assistant", "content": "", "tool_calls": [check]},
                   {"role": "tool", "content": "src/app.py:9: W292 no newline at end of file"},
                   {"role": "assistant", "content": "", "tool_calls": [change]}, {"role": "tool", "content": ""}]
        assert tool_verdict("src/app.py:9: W292 no newline at end of file", [check], "Make lint pass.",
                            history).reason.startswith("tool returned")


@pytest.mark.parametrize("request_text, expected", [
    ("Generate a requirements.txt for this project.", 1),   # naming the file it should create is not owning one
    ("Export the runs table to results.csv.", 1),
    ("Schreib bitte eine Zusammenfassung in results.csv.", 1),
    ("Review results.csv and suggest fixes.", -1),          # advice, not an edit
])
def test_a_file_the_request_asks_to_create_is_not_an_overwrite(request_text, expected):
    write = [_call("write_file", path="results.csv", content="a,b")]
    assert tool_verdict("wrote 4 bytes to results.csv", write, request_text).verdict == expected


@pytest.mark.parametrize("request_text", [
    "Read report.md and suggest cuts, but please don't edit it.",
    "Proofread report.md; do not modify the file, just list the typos.",
    "Review report.md without changing anything.",
])
def test_an_edit_verb_under_a_negation_asks_for_no_edit(request_text):
    write = [_call("write_file", path="report.md", content="(shorter)")]
    assert tool_verdict("Saved report.md (1.2 kB)", write, request_text).verdict == -1
    assert tool_verdict("Saved report.md (1.2 kB)", write, "Shorten report.md and save it.").verdict == 1


@pytest.mark.parametrize("result", [
    "npm: Befehl nicht gefunden",
    "cp: Keine Berechtigung",
    "bash: ./run.sh: Permission non accordée",
    "zsh: commande introuvable : gradle",
    "ls: no se puede acceder a 'out': No existe el archivo o el directorio",
    "bash: docker: 未找到命令",
    "build finished [Exit-Code 2]",
    "tâche terminée (code de sortie 1)",
    "proceso terminado con código de salida 3",
    "进程已结束，退出码 1",
    "file:///srv/app/index.mjs:12\n    throw new Error('no config');\n    ^\n\nError: no config\n"
    "    at file:///srv/app/index.mjs:12:11\n    at ModuleJob.run (node:internal/modules/esm/module_job:195:25)",
])
def test_shell_errors_in_other_languages_and_node_stacks_are_failures(result):
    assert tool_verdict(result, [_call("exec", command="x")], "Run it.").verdict == -1


@pytest.mark.parametrize("result", ["finished [Exit-Code 0]", "terminé (code de sortie 0)",
                                    "2024-02-01 04:00:12 WARN upstream timed out after 30 s\n"
                                    "2024-02-01 04:00:13 INFO retry ok"])
def test_a_zero_exit_code_or_a_timeout_inside_a_log_line_is_data(result):
    assert tool_verdict(result, [_call("exec", command="x")], "Show the tail of the log.").verdict == 1


_PYTEST_FAILS = ("tests/test_parse.py .F.                                [100%]\n\n=== FAILURES ===\n"
                 ">       assert parse(\"2024-05-01\") == date(2024, 5, 1)\n"
                 "E       AssertionError: assert None == datetime.date(2024, 5, 1)\n\n"
                 "tests/test_parse.py:9: AssertionError\n=== short test summary info ===\n"
                 "FAILED tests/test_parse.py::test_dates - AssertionError: assert None == datet...\n"
                 "========================= 1 failed, 2 passed in 0.05s =========================")
_FIX_HISTORY = [{"role": "user", "content": "Fix the bug in parse.py, the date test fails"},
                {"role": "assistant", "content": None, "tool_calls": [_call("edit_file", path="parse.py", old="a", new="b")]},
                {"role": "tool", "content": "edited parse.py"}]


@pytest.mark.parametrize("result", [_PYTEST_FAILS, "FAILED (failures=1)", "Tests:       1 failed, 4 passed, 5 total",
                                    "  2 passing (12ms)\n  1 failing", "test result: FAILED. 3 passed; 1 failed",
                                    "--- FAIL: TestParse (0.00s)\nFAIL\texample.com/parse\t0.002s",
                                    "Error: date format not recognised"])
def test_after_a_fix_the_failures_its_check_prints_are_the_fixs(result):
    """"Fix the bug" asks for a fix, not for error data: once the assistant edited, tests that still
    fail (any runner's summary) or an error line is -1, though the request mentions a bug."""
    run = [_call("bash", command="pytest -q tests/test_parse.py")]
    assert tool_verdict(result, run, _FIX_HISTORY[0]["content"], _FIX_HISTORY).verdict == -1


@pytest.mark.parametrize("request_text", ["Fix the bug in parse.py, the date test fails", "Run the tests.",
                                          "Why does the date test fail? Show me the output."])
def test_a_failing_test_run_before_any_change_is_data(request_text):
    """Reproducing the failure before touching anything, or running the tests because the user
    asked, returns what was asked for: the call worked."""
    history = [{"role": "user", "content": request_text}]
    assert tool_verdict(_PYTEST_FAILS, [_call("bash", command="pytest -q")], request_text, history).verdict == 1


def test_passing_tests_after_a_fix_are_plus_one():
    ok = "tests/test_parse.py ...                                [100%]\n=== 3 passed in 0.04s ==="
    run = [_call("bash", command="pytest -q tests/test_parse.py")]
    assert tool_verdict(ok, run, _FIX_HISTORY[0]["content"], _FIX_HISTORY).verdict == 1


@pytest.mark.parametrize("result", [
    "app.rb:3:in `divide': divided by 0 (ZeroDivisionError)\n\tfrom app.rb:7:in `<main>'",
    "undefined method `name' for nil:NilClass (NoMethodError)",
    "** (ArithmeticError) bad argument in arithmetic expression\n    :erlang./(1, 0)",
    "Get-Item : Cannot find path 'C:\\nope' because it does not exist.\nAt line:1 char:1\n+ Get-Item C:\\nope\n"
    "    + CategoryInfo          : ObjectNotFound: (C:\\nope:String) [Get-Item], ItemNotFoundException",
    "Invoke-WebRequest: Response status code does not indicate success: 503 (Service Unavailable).",
])
def test_ruby_elixir_and_powershell_errors_are_failures(result):
    assert tool_verdict(result, [_call("exec", command="x")], "Run it.").verdict == -1


@pytest.mark.parametrize("result", [
    "Dec  5 09:15:20 web1 sshd[812]: error: maximum authentication attempts exceeded for root\n"
    "Dec  5 09:15:22 web1 sshd[812]: Disconnecting authenticating user root",
    "HTTP/1.1 200 OK\nContent-Type: application/json\nSet-Cookie: sid=1\n\n{\"items\": []}",
])
def test_syslog_lines_and_response_headers_are_data(result):
    assert tool_verdict(result, [_call("exec", command="x")], "Show me what the server sent.").verdict == 1


@pytest.mark.parametrize("command", ["sed -i 's/TODO/DONE/' notes.md", "perl -pi -e 's/TODO/DONE/' notes.md",
                                     "sed -i.bak -e 's/a/b/' notes.md"])
def test_an_in_place_edit_of_a_file_the_user_only_asked_to_read_is_an_overwrite(command):
    read = "What does notes.md say?"
    assert tool_verdict("", [_call("bash", command=command)], read, [{"role": "user", "content": read}]).verdict == -1
    asked = "Mark every TODO in notes.md as DONE"
    assert tool_verdict("", [_call("bash", command=command)], asked, [{"role": "user", "content": asked}]).verdict == 1
    assert tool_verdict("# notes", [_call("bash", command="sed -n '1,5p' notes.md")], read).verdict == 1


def test_overwriting_the_users_file_is_not_rewarded(judge):
    history = [{"role": "user", "content": "Summarise my homework.docx for me."},
               {"role": "assistant", "content": "", "tool_calls": [_call("read_file", path="homework.docx")]},
               {"role": "tool", "content": "Essay: the causes of WW1 ..."}]
    request = "Summarise my homework.docx for me."
    write = [_call("write_file", path="homework.docx", content="Summary: ...")]
    inp = JudgeInput("", "wrote 212 bytes to homework.docx", "tool", write, request, history)
    assert _verdict(judge, inp) == -1
    shell = [_call("exec", command="echo summary > homework.docx")]
    assert _verdict(judge, JudgeInput("", "", "tool", shell, request, history)) == -1
    asked = "Fix the typo in homework.docx and save it."
    assert _verdict(judge, JudgeInput("", "wrote 212 bytes", "tool", write, asked, history)) == 1
    new = [_call("write_file", path="summary.md", content="Summary: ...")]
    assert _verdict(judge, JudgeInput("", "wrote 40 bytes to summary.md", "tool", new, request, history)) == 1


@pytest.mark.parametrize("request_text, result, expected", [
    # the user named the file only to keep it
    ("Put the meeting summary in summary.txt and leave minutes.txt untouched.", "wrote 90 bytes to minutes.txt", -1),
    ("Don't touch minutes.txt; write the summary to a new file.", "saved minutes.txt", -1),
    ("Save the summary over minutes.txt.", "saved minutes.txt", 1),
    # the result says the old contents are gone, though nothing earlier named the file
    ("Write a haiku to poem.txt.", "minutes.txt saved; the old content (52 lines) has been discarded.", -1),
    ("Write a haiku to poem.txt.", "minutes.txt saved (3 lines).", 1),
])
def test_an_overwrite_the_request_did_not_ask_for_is_a_failure(request_text, result, expected):
    write = [_call("write_file", path="minutes.txt", content="...")]
    assert tool_verdict(result, write, request_text).verdict == expected


@pytest.mark.parametrize("result, request_text, expected", [
    ("Traceback (most recent call last):\n  File \"a.py\", line 1\nNameError: name 'x' is not defined", "Run a.py.", -1),
    ("make: *** [build] Error 1\n[exit code: 2]", "Build it.", -1),
    ("HTTP/1.1 404 Not Found\n\n{}", "Fetch the user.", -1),
    ('{"status": 401, "message": "token expired"}', "Post it.", -1),
    ("bash: gti: command not found", "Show the log.", -1),
    ('{"ok": false, "reason": "bad time"}', "Book it.", -1),
    ("2024-05-02 10:01 ERROR db reset\n2024-05-02 10:02 INFO ok", "Show the errors in the log.", 1),
    ("PROJ-1  Fix error message on login page\nPROJ-2  Add retry to the uploader", "List my tickets.", 1),
    ("", "Are there TODOs left?", 1),
    ("24 passed in 3.1s", "Run the tests.", 1),
    ('{"job": 9, "state": "queued"}', "Start the job.", 0),
    ("Job 4410 accepted\nStatus: RUNNING", "Start the export.", 0),
    ("Migration mig-12 in progress (2 of 9 tables)", "Migrate the database.", 0),
    ("Pipeline 77 created. Track its progress on the dashboard.", "Run the pipeline.", 0),
    ("Print job 12 queued (2 ahead of you).", "Print the boarding pass.", 0),
    ('{"task": "t-88", "status": "waiting_for_worker"}', "Transcode the clip.", 0),
    ("Backup started; we will notify you once the archive is complete.", "Back up my photos.", 0),
    ('{"error": "TimeoutError in fetch_rates", "count": 14, "last_seen": "2024-03-02"}',
     "Show me the most frequent exception from the error tracker.", 1),
    ('{"error": "quota exceeded"}', "Send the newsletter.", -1),
    ("2023/11/02 07:15:40 [crit] 88#88: connect() to unix:/run/app.sock failed (13: Permission denied)",
     "Paste the last line of the proxy's error log.", 1),
])
def test_tool_results_are_read_by_structure(result, request_text, expected):
    assert tool_verdict(result, [_call("exec", command="x")], request_text).verdict == expected


def test_features_carry_the_turns_context():
    assert "ctx:new_number" in featurize("The ticket says 7:50.", "When is my train?", "It leaves at 7:15.")
    assert "ctx:repeats_request" in featurize("how do I undo the last commit", "How do I undo the last commit?", "x")
    assert "ctx:pastes_reply" in featurize("Here:\nfor i in range(n):\n    s += i", "Fix it", "for i in range(n):\n  x")


def test_judge_input_carries_the_turns_history():
    class Turn:
        response_text, next_state, next_state_role, tool_calls = "", "ok", "tool", [_call("ls")]
        messages = [{"role": "user", "content": "List files."}]

    inp = judge_input_for_turn(Turn())
    assert inp.user_request == "List files." and list(inp.history) == Turn.messages


def test_auto_picks_the_classifier_and_says_so_in_one_line(monkeypatch, caplog):
    monkeypatch.delenv("PRM_URL", raising=False)
    monkeypatch.delenv("PRM_MODE", raising=False)
    with caplog.at_level(logging.INFO, logger="openclaw_rl.judges.modes"):
        backend = build_backend(model_path="builtin:smollm2-135m")
    assert isinstance(backend, ClassifierBackend)
    (line,) = [r.getMessage() for r in caplog.records if r.name == "openclaw_rl.judges.modes"]
    assert line.startswith("PRM judge: classifier (auto:") and "\n" not in line
    assert describe_prm_choice("auto", "/models/qwen3-7b").startswith("PRM judge: logprob (auto:")
    assert describe_prm_choice("lexical", None) == "PRM judge: lexical (--prm-mode lexical)"
    assert describe_prm_choice("auto", None, "http://judge/v1").startswith("PRM judge: endpoint http://judge/v1")


def test_judge_eval_reports_recall_flips_tags_and_languages(tmp_path, capsys):
    rows = [  # lexical: a and b right, c a sign flip (a +1 case voted -1), d right; e voted 0
        {"name": "a", "request": "Q", "response": "A", "next_state": "Thanks!", "role": "user", "expected": 1,
         "tags": ["thanks"]},
        {"name": "b", "request": "Q", "response": "A", "next_state": "No, that's wrong.", "role": "user",
         "expected": -1, "tags": ["explicit"]},
        {"name": "c", "request": "Q", "response": "A", "next_state": "Thanks anyway, it works now.",
         "role": "user", "expected": 1, "tags": ["worked", "lang:en"]},
        {"name": "d", "request": "Q", "response": "A", "next_state": "Nope.", "role": "user", "expected": -1,
         "tags": ["terse", "lang:de"]},
        {"name": "e", "request": "Q", "response": "A", "next_state": "Nein, das ist falsch.", "role": "user",
         "expected": -1, "tags": ["explicit", "lang:de"]},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    assert main(["judge-eval", "--cases", str(path), "--modes", "lexical", "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)["prm"]
    assert r["confusion"]["1"] == {"1": 1, "-1": 1, "0": 0} and r["confusion"]["-1"] == {"1": 0, "-1": 2, "0": 1}
    assert r["sign_flip_rate"] == 1 / 5 and r["recall"]["1"] == 0.5 and r["recall"]["-1"] == 2 / 3
    assert r["per_lang"] == {"en": {"n": 3, "correct": 2, "accuracy": 2 / 3}, "de": {"n": 2, "correct": 1, "accuracy": 0.5}}
    assert r["per_tag"]["explicit"] == {"n": 2, "correct": 1, "accuracy": 0.5} and "lang:de" not in r["per_tag"]
    assert main(["judge-eval", "--cases", str(path), "--modes", "lexical,classifier"]) == 0
    out = capsys.readouterr().out
    assert "flips" in out.splitlines()[1] and "rec -1" in out.splitlines()[1]
    row = next(ln for ln in out.splitlines() if ln.startswith("lexical "))
    assert " 0.200 " in row  # the sign-flip rate
    de = next(ln for ln in out.splitlines() if ln.startswith("de "))
    assert de.split()[1] == "2" and de.split()[2] == "0.500"  # n, lexical's accuracy
    assert next(ln for ln in out.splitlines() if ln.startswith("explicit ")).split()[1] == "2"


@pytest.mark.parametrize("result", [
    "2025-01-09 22:10:04 WARN [billing] upstream said 502 Bad Gateway, retrying\n"
    "2025-01-09 22:10:09 ERROR [billing] gave up after 3 tries",
    "Jan  9 22:11:40 host cron[811]: (backup) job exited with code 3",
])
def test_an_http_status_or_exit_code_inside_the_log_the_user_asked_for_is_data(result):
    assert tool_verdict(result, [_call("exec", command="tail -n 2 /var/log/app.log")],
                        "What went wrong in the app log last night?").verdict == 1


_TRACE = ("Traceback (most recent call last):\n  File \"/srv/jobs/mail.py\", line 12, in send\n"
          "    smtp.login(user, pw)\nsmtplib.SMTPAuthenticationError: (535, b'bad credentials')")


def test_tracebacks_a_search_found_are_data_the_programs_own_are_failures():
    search = [_call("exec", command="grep -h -A3 Traceback logs/jobs-*.log | head -n 20")]
    assert tool_verdict(_TRACE, search, "Find the last crash in the job logs.").verdict == 1
    run = [_call("exec", command="python /srv/jobs/mail.py")]
    assert tool_verdict(_TRACE, run, "Send the test mail, and show me what fails if it does.").verdict == -1
    # the search itself failing is still a failure
    assert tool_verdict("grep: logs/jobs-*.log: No such file or directory", search,
                        "Find the last crash in the job logs.").verdict == -1


@pytest.mark.parametrize("result", [
    "Der Befehl \"node\" ist entweder falsch geschrieben oder\nkonnte nicht gefunden werden.",
    "'gradle' n'est pas reconnu en tant que commande interne\nou externe, un programme exécutable ou un fichier de commandes.",
    "\"pip\" no se reconoce como un comando interno o externo,\nprograma o archivo por lotes ejecutable.",
    "'npm' 不是内部或外部命令，也不是可运行的程序\n或批处理文件。",
    "Failed to stop postgresql.service: Access denied\nSee system logs for details.",
    "sudo: pam_authenticate failed: Authentication failure",
])
def test_windows_and_access_check_refusals_are_failures(result):
    assert tool_verdict(result, [_call("exec", command="x")], "Run it.").verdict == -1


def test_python_code_that_writes_over_a_file_to_keep_is_an_overwrite():
    request = "Normalise the emails and save the result as contacts_clean.csv. Keep contacts.csv as it is."
    over = [_call("python", code="import pandas as pd\ndf = pd.read_csv('contacts.csv')\n"
                                 "df['email'] = df.email.str.lower()\ndf.to_csv('contacts.csv', index=False)")]
    assert tool_verdict("done", over, request).verdict == -1
    new = [_call("python", code="import pandas as pd\ndf = pd.read_csv('contacts.csv')\n"
                                "df['email'] = df.email.str.lower()\ndf.to_csv('contacts_clean.csv', index=False)")]
    assert tool_verdict("done", new, request).verdict == 1


@pytest.mark.parametrize("result, expected", [
    ("Overwrote notes.md (42 lines -> 5 lines)", -1),
    ("Wrote 61 bytes to notes.md (existing file replaced; previous size 2,480 bytes)", -1),
    ("Overwrote notes.md (42 lines -> 47 lines)", 1),
    ("Wrote 2,541 bytes to notes.md (existing file replaced; previous size 2,480 bytes)", 1),
])
def test_a_write_that_shrinks_a_file_the_user_asked_to_add_to_is_an_overwrite(result, expected):
    write = [_call("write_file", path="notes.md", content="## Next steps\n- call Dana\n")]
    assert tool_verdict(result, write, "Add a 'Next steps' section to notes.md, keep the rest.").verdict == expected
