"""Math answer extraction, normalisation and comparison for math_tool.

* :func:`extract_boxed`: the content of the **last** ``\\boxed{...}`` (nested braces kept) in a
  response, after dropping ``<tool_call>...</tool_call>`` and ``<interpreter>...</interpreter>``
  blocks (a box printed by a program or written inside code is not the final answer).
* :func:`parse_number`: the number an answer states, as an exact :class:`fractions.Fraction`:
  integers, decimals (``3.50``, ``.5``, ``-2``), thousands commas (``1,234,567``; only well-formed
  groups of three), fractions ``a/b``, ``\\frac{a}{b}`` (``\\dfrac``, ``\\tfrac``) and mixed
  numbers (``3\\frac{1}{2}``, ``3 1/2``); wrappers ``\\text{}``, ``\\mathrm{}``, ``\\textbf{}``;
  currency and units (``$``, ``\\$``, ``€``, ``£``, ``%``, ``\\%``, ``USD``, trailing words such as
  ``dollars``, ``cm``, ``apples``, ``^\\circ``); ``x = 5`` keeps the right-hand side; unicode minus.
  Anything else (two numbers, an expression, words only, trailing words that change the number
  such as ``and a half``, ``dozen``, ``million``) gives ``None``.
* :func:`answers_match`: equal when exactly equal, or within a relative ``1e-6``, or when the
  prediction is the gold value rounded to the prediction's own number of decimals, at least two
  (``3.33`` for ``10/3``; ``3.3`` is not accepted).
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

__all__ = ["answers_match", "extract_boxed", "is_correct", "parse_number", "strip_tool_blocks"]

_BLOCKS = re.compile(r"<tool_call>.*?(?:</tool_call>|$)|<interpreter>.*?(?:</interpreter>|$)", re.DOTALL)
_WRAPPERS = re.compile(r"\\(?:text|mathrm|textbf|mathbf|textit|mbox|operatorname)\s*\{([^{}]*)\}")
_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*([^{}]+?)\s*\}\s*\{\s*([^{}]+?)\s*\}")
_FRAC_SHORT = re.compile(r"\\[dt]?frac\s*(\d)\s*(\d)")  # \frac12
_NUM = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[+-]?\.\d+"
_NUMBER = re.compile(rf"^(?:{_NUM})$")
_FRACTION = re.compile(rf"^({_NUM})\s*/\s*({_NUM})$")
_MIXED = re.compile(r"^([+-]?\d+)\s+(\d+)\s*/\s*(\d+)$")
_CURRENCY_WORDS = re.compile(r"^(?:usd|eur|gbp|rs\.?|inr)\s*|\s*(?:usd|eur|gbp)$", re.IGNORECASE)
_NUMBER_WORDS = {"and", "or", "plus", "minus", "times", "over", "point", "half", "halves", "third", "thirds",
                 "quarter", "quarters", "fourth", "fourths", "fifth", "fifths", "dozen", "dozens", "hundred",
                 "hundreds", "thousand", "thousands", "million", "millions", "billion", "billions", "k", "bn", "x"}
_TRAILING_WORDS = re.compile(r"(?:\s*(?:[a-zA-Z]+\.?|\^\s*\{?\\circ\}?|°)(?:\s*(?:/|per)\s*[a-zA-Z]+)?)+$")


def strip_tool_blocks(text: str) -> str:
    """``text`` without ``<tool_call>`` and ``<interpreter>`` blocks (an unclosed one runs to the end)."""
    return _BLOCKS.sub(" ", text or "")


def extract_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) outside tool blocks, braces
    balanced; ``None`` when there is none or its braces never close."""
    text = strip_tool_blocks(text)
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    for start in reversed(starts):
        depth = 1
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    return text[start:i].strip()
    return None


def _clean(s: str) -> str:
    s = s.strip().replace("\u2212", "-").replace("\u2013", "-")
    for _ in range(3):
        s = _WRAPPERS.sub(r"\1", s)
    s = re.sub(r"\\[,!;: ]|~|\\quad|\\qquad", " ", s)
    s = s.replace("{,}", ",").replace("\\left", "").replace("\\right", "")
    s = s.replace("\\$", "").replace("$", "").replace("\\%", "").replace("%", "")
    s = s.replace("€", "").replace("£", "").replace("¥", "")
    if "=" in s:
        s = s.rsplit("=", 1)[1]
    s = _CURRENCY_WORDS.sub("", s.strip())
    m = _TRAILING_WORDS.search(s)
    if m:
        if _NUMBER_WORDS & {w.lower() for w in re.findall(r"[a-zA-Z]+", m.group(0))}:
            return ""  # "2 and a half", "3 dozen", "1.5 million": words that change the number
        s = s[:m.start()].strip()
    s = s.rstrip(".").strip()
    while s.startswith("{") and s.endswith("}"):
        s = s[1:-1].strip()
    return s


def _plain(s: str) -> Fraction | None:
    s = s.strip()
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1].strip()
    if _NUMBER.match(s):
        return Fraction(Decimal(s.replace(",", "")))
    m = _FRACTION.match(s)
    if m:
        den = Fraction(Decimal(m.group(2).replace(",", "")))
        return None if den == 0 else Fraction(Decimal(m.group(1).replace(",", ""))) / den
    m = _MIXED.match(s)
    if m and int(m.group(3)) != 0 and int(m.group(2)) < int(m.group(3)):
        whole, part = int(m.group(1)), Fraction(int(m.group(2)), int(m.group(3)))
        return whole - part if m.group(1).startswith("-") else whole + part
    return None


def parse_number(answer: str | None) -> Fraction | None:
    """The number ``answer`` states (see the module doc), or ``None``.

    Args:
        answer: a boxed answer or a label (``"1,000"``, ``"\\frac{7}{2}"``, ``"$12.50"``).

    Returns:
        The exact value; ``None`` when ``answer`` is empty or is not one number.
    """
    if answer is None:
        return None
    s = _clean(answer)
    if not s:
        return None
    s = _FRAC_SHORT.sub(r"\\frac{\1}{\2}", s)
    m = re.match(r"^([+-]?\d+)\s*" + _FRAC.pattern + "$", s)  # mixed: 3\frac{1}{2}
    if m:
        whole = int(m.group(1))
        frac = _plain(f"{m.group(2)}/{m.group(3)}")
        if frac is None or frac >= 1 or frac < 0:
            return None
        return whole - frac if m.group(1).startswith("-") else whole + frac
    neg = False
    if s.startswith("-") and _FRAC.match(s[1:].strip()):
        neg, s = True, s[1:].strip()
    m = _FRAC.fullmatch(s)
    if m:
        value = _plain(f"{_clean(m.group(1))}/{_clean(m.group(2))}")
        return None if value is None else (-value if neg else value)
    return _plain(s)


def _decimals(answer: str) -> int:
    m = re.search(r"\.(\d+)", _clean(answer))
    return len(m.group(1)) if m and "/" not in _clean(answer) and "frac" not in answer else 0


def answers_match(predicted: str | None, gold: str) -> bool:
    """Whether ``predicted`` states the same number as ``gold`` (see the module doc for the
    tolerance). ``False`` when either is not a number."""
    p, g = parse_number(predicted), parse_number(gold)
    if p is None or g is None:
        return False
    if p == g or abs(p - g) <= Fraction(1, 10**6) * max(1, abs(g)):
        return True
    d = _decimals(predicted or "")
    if d >= 2:
        q = Decimal(1).scaleb(-d)
        rounded = (Decimal(g.numerator) / Decimal(g.denominator)).quantize(q, rounding=ROUND_HALF_UP)
        return Fraction(rounded) == p
    return False


def is_correct(response: str, gold: str) -> tuple[bool, str | None]:
    """``(correct, predicted)``: whether the last boxed answer of ``response`` matches ``gold``,
    and that boxed text (``None`` when there is no box)."""
    pred = extract_boxed(response)
    return answers_match(pred, gold), pred
