"""``openclaw-rl judge-eval``: tables, JSON, every mode on a real model, and bad input."""

from __future__ import annotations

import json

import pytest

from openclaw_rl.cli import main
from openclaw_rl.judges.cases import load_cases
from openclaw_rl.judges.lexical import lexical_verdict

TINY = "builtin:tiny-qwen3"
GOOD = [
    {"name": "a", "request": "Q", "response": "A", "next_state": "Thanks, perfect!", "role": "user", "expected": 1},
    {"name": "b", "request": "Q", "response": "A", "next_state": "No, that's wrong.", "role": "user", "expected": -1},
    {"request": "Read a", "response": "", "next_state": "[tool c] Error: no such file", "role": "tool", "expected": -1,
     "tool_calls": [{"type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a\"}"}}]},
    {"name": "d", "request": "Q", "response": "A", "next_state": "Hmm, ok.", "role": "user", "expected": 1,
     "tags": ["x"], "hint_terms": ["ok"]},
]


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def test_lexical_table_on_the_extended_set(capsys):
    assert main(["judge-eval", "--modes", "lexical", "--hint-modes", "extractive"]) == 0
    out = capsys.readouterr().out
    cases = load_cases()
    correct = sum(lexical_verdict(c.next_state, c.role) == c.expected for c in cases)
    assert f"{len(cases)} cases from the extended set" in out
    row = next(ln for ln in out.splitlines() if ln.startswith("lexical "))
    assert f"{correct / len(cases):.3f}" in row and " 0.000 " in row  # accuracy, no invalid vote
    assert any(ln.startswith("extractive ") for ln in out.splitlines())


def test_json_report_with_confusion_counts(tmp_path, capsys):
    path = _write(tmp_path / "c.jsonl", GOOD + [""])  # a blank line is skipped
    assert main(["judge-eval", "--cases", path, "--modes", "lexical", "--json", "--verbose", "-n", "3"]) == 0
    rep = json.loads(capsys.readouterr().out)
    (r,) = rep["prm"]
    assert rep["n_cases"] == 4 and r["mode"] == "lexical" and r["cases"] == 4
    # d ("Hmm, ok." expected +1) is voted 0 by the rules; the other three are right
    assert r["confusion"] == {"1": {"1": 1, "-1": 0, "0": 1}, "-1": {"1": 0, "-1": 2, "0": 0},
                              "0": {"1": 0, "-1": 0, "0": 0}}
    assert r["accuracy"] == 0.75 and r["invalid_rate"] == 0.0 and r["balanced_accuracy"] == 0.75
    assert [c["name"] for c in r["per_case"]] == ["a", "b", "line3", "d"] and r["per_case"][0]["votes"] == [1, 1, 1]
    assert main(["judge-eval", "--cases", path, "--tags", "x", "--modes", "lexical", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_cases"] == 1


def test_every_local_mode_on_the_tiny_model(tmp_path, capsys):
    path = _write(tmp_path / "c.jsonl", GOOD)
    assert main(["judge-eval", "--cases", path, "--model-path", TINY, "--modes", "all", "--hint-modes", "all",
                 "--json", "--verbose"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in rep["prm"]] == ["classifier", "probe", "lexical", "hybrid", "prototype", "channel",
                                               "logprob", "generate"]
    for r in rep["prm"]:
        assert sum(sum(row.values()) for row in r["confusion"].values()) == 4
        assert 0.0 <= r["accuracy"] <= 1.0 and 0.0 <= r["invalid_rate"] <= 1.0
        for c in r["per_case"]:
            assert c["verdict"] in (1, -1, 0) and len(c["votes"]) == 1
            if c["probs"] is not None:
                assert abs(sum(c["probs"].values()) - 1.0) < 1e-3
        if r["mode"] != "generate":
            assert r["invalid_rate"] == 0.0
    assert [h["mode"] for h in rep["hints"]] == ["extractive", "structured"]
    for h in rep["hints"]:
        assert h["corrections"] == 0 and h["others"] == 2  # no user correction here carries hint_terms
    assert main(["judge-eval", "--cases", path, "--model-path", TINY, "--modes", "prototype,channel", "--json",
                 "--verbose"]) == 0
    again = json.loads(capsys.readouterr().out)["prm"]
    assert [r["per_case"] for r in again] == [r["per_case"] for r in rep["prm"][4:6]]  # deterministic


def test_endpoint_mode_against_a_real_server(tmp_path, capsys, tiny_server):
    path = _write(tmp_path / "c.jsonl", GOOD[:2])
    assert main(["judge-eval", "--cases", path, "--modes", "endpoint", "--prm-url", tiny_server.base_url,
                 "--prm-model-name", TINY, "--prm-api-key", tiny_server.api_key, "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)["prm"]
    assert r["mode"] == "endpoint" and r["cases"] == 2 and 0.0 <= r["invalid_rate"] <= 1.0


@pytest.mark.parametrize("rows, argv, message", [
    (None, [], "no such file"),
    ([GOOD[0], "{not json"], [], ":2: not valid JSON"),
    ([GOOD[0], GOOD[1], {**GOOD[0], "name": "z", "expected": 2}], [], ":3: 'expected' must be 1, -1 or 0"),
    ([{**GOOD[0], "role": "assistant"}], [], ":1: 'role' must be"),
    ([{**GOOD[0], "expected": True}], [], ":1: 'expected' must be"),
    ([{k: v for k, v in GOOD[0].items() if k != "next_state"}], [], ":1: missing field(s) next_state"),
    ([{**GOOD[0], "score": 1}], [], ":1: unknown field(s) score"),
    ([{**GOOD[0], "next_state": 7}], [], ":1: 'next_state' must be a string"),
    ([{**GOOD[0], "tags": "x"}], [], ":1: 'tags' must be a list of strings"),
    ([GOOD[0], GOOD[0]], [], ":2: duplicate name 'a'"),
    (["[1, 2]"], [], ":1: a case must be a JSON object"),
    ([""], [], ":1: no judge case"),
    ([GOOD[0]], ["--modes", "psychic"], "--modes: unknown mode(s) psychic"),
    ([GOOD[0]], ["--modes", "endpoint"], "--modes endpoint needs --prm-url"),
    ([GOOD[0]], ["--tags", "nope"], "no case has one of the tags"),
    ([GOOD[0]], ["-n", "0"], "-n must be >= 1"),
])
def test_bad_input_is_a_one_line_error(tmp_path, capsys, rows, argv, message):
    path = str(tmp_path / "missing.jsonl") if rows is None else _write(tmp_path / "c.jsonl", rows)
    assert main(["judge-eval", "--cases", path, "--modes", "lexical", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("openclaw-rl judge-eval: error:") and message in err and len(err.splitlines()) == 1
    if rows is not None and ":" in message[:3]:
        assert f"{path}{message.split(' ')[0]}" in err  # names file:line
