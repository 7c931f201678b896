"""math_tool answer checking: boxed extraction, normalisation, numeric comparison (true and false matches)."""

from fractions import Fraction

import pytest

from openclaw_rl.envs.math_tool.answer import answers_match, extract_boxed, is_correct, parse_number


@pytest.mark.parametrize("text, expected", [
    (r"so \boxed{42}", "42"),
    (r"\boxed{1} then \boxed{2}", "2"),
    (r"\boxed{\frac{7}{2}}", r"\frac{7}{2}"),
    (r"answer: \boxed{\text{12 dollars}}.", r"\text{12 dollars}"),
    (r"\boxed {  5 }", "5"),
    (r"\fbox{9}", "9"),
    ("no box here", None),
    (r"\boxed{unclosed", None),
    (r"\boxed{3} and then \boxed{never closes", "3"),
    # a box inside a tool call or an interpreter output is not the final answer
    ('\\boxed{7}<tool_call>{"name": "code_interpreter", "arguments": {"code": "print(\'\\\\boxed{1}\')"}}</tool_call>',
     "7"),
    ("<interpreter>\n\\boxed{1}\n</interpreter> so \\boxed{8}", "8"),
    ("<interpreter>\n\\boxed{1}\n</interpreter> and no answer", None),
    ("", None),
])
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


@pytest.mark.parametrize("answer, value", [
    ("42", 42), ("-3", -3), ("+3", 3), ("3.50", Fraction(7, 2)), (".5", Fraction(1, 2)), ("12.0", 12),
    ("1,234", 1234), ("1,234,567.5", Fraction(2469135, 2)), ("7/2", Fraction(7, 2)), ("-7/2", Fraction(-7, 2)),
    (r"\frac{7}{2}", Fraction(7, 2)), (r"\dfrac{1}{3}", Fraction(1, 3)), (r"-\frac{1}{4}", Fraction(-1, 4)),
    (r"\frac12", Fraction(1, 2)), (r"3\frac{1}{2}", Fraction(7, 2)), ("3 1/2", Fraction(7, 2)),
    ("$12.50", Fraction(25, 2)), (r"\$12", 12), ("12 dollars", 12), ("15 cm", 15), ("10%", 10), (r"10\%", 10),
    ("USD 300", 300), ("€5", 5), (r"\text{12 apples}", 12), (r"\textbf{7}", 7), ("x = 5", 5),
    ("\u22125", -5), ("90^\\circ", 90), ("60 km/h", 60), ("5 miles per hour", 5), ("{5}", 5), ("(4)", 4),
    ("1{,}000", 1000), ("6 hrs.", 6), ("18.", 18), ("10 percent", 10), ("5 m", 5), ("3 meters per second", 3),
])
def test_parse_number(answer, value):
    assert parse_number(answer) == value


@pytest.mark.parametrize("answer", [
    None, "", "twelve", "1,2", "12,34", "3 and 4", "2 + 3", "5, 6", "1/0", r"\frac{1}{0}", "abc 5 def", "3 5/2",
    "1.2.3", "--5", "5 1", "x", "2 and a half", "3 dozen", "1.5 million", "2 thousand", "5k", "2 or 3",
])
def test_parse_number_rejects(answer):
    assert parse_number(answer) is None


@pytest.mark.parametrize("pred, gold", [
    ("42", "42"), ("42.0", "42"), ("42.00", "42"), ("1,000", "1000"), ("$1,000", "1000"), ("1000 dollars", "1,000"),
    (r"\frac{7}{2}", "3.5"), ("7/2", "3.5"), ("3.5", "7/2"), (r"3\frac{1}{2}", "3.5"), ("10%", "10"),
    ("3.33", "10/3"), ("3.333", "10/3"), ("0.67", "2/3"), ("-5", "-5"), ("0.1", "0.10"), (r"\text{18 cm}", "18"),
])
def test_answers_match(pred, gold):
    assert answers_match(pred, gold)


@pytest.mark.parametrize("pred, gold", [
    ("12", "120"), ("12.5", "12"), ("13", "12"), ("3.3", "10/3"), ("3.34", "10/3"), ("-5", "5"), ("0.1", "10"),
    ("10001", "10000"), ("", "5"), (None, "5"), ("five", "5"), ("5", "five"), ("2/3", "0.67"), ("1,2", "12"),
    ("6 and 7", "6"), ("1.0000001", "2"), ("2 and a half", "2"), ("3 dozen", "3"),
])
def test_answers_do_not_match(pred, gold):
    assert not answers_match(pred, gold)


def test_is_correct_uses_the_last_box():
    assert is_correct(r"first \boxed{3}, corrected: \boxed{4}", "4") == (True, "4")
    assert is_correct(r"first \boxed{4}, corrected: \boxed{3}", "4") == (False, "3")
    assert is_correct("the answer is 4", "4") == (False, None)
