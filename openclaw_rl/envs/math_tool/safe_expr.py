"""The safety check every GSM-Symbolic template expression passes before it is evaluated.

Template expressions (init right-hand sides, conditions, ``#answer``, the worked solution's
``{...}`` parts) are evaluated by the package's restricted AST walker; this check narrows them
further, ahead of any evaluation: only whitelisted node types (no attribute access, subscripts,
lambdas, comprehensions, f-strings or assignments), names that are template variables,
replacement lists or whitelisted helpers, calls only of helpers by name, and ``**`` only with a
small constant exponent (no ``10 ** 10 ** 10``).
"""

from __future__ import annotations

import ast

from multilingual_gsm_symbolic._helpers import parse_expr

__all__ = ["HELPERS", "TemplateError", "check_expression"]

#: helper functions a template expression may call (the package's English helpers)
HELPERS = frozenset({"sample", "range", "range_list", "range_str", "sample_sequential", "arange", "list", "int",
                     "float", "str", "len", "round", "is_int", "divides", "Fraction", "plural", "ensure_int"})
_NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.List, ast.Tuple, ast.BinOp, ast.UnaryOp, ast.Call,
          ast.Compare, ast.BoolOp, ast.IfExp, ast.keyword, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_MAX_POW_EXPONENT = 10


class TemplateError(ValueError):
    """A template cannot be used: unsafe expression, evaluation error, no valid assignment, or an answer
    formula that disagrees with its worked solution (the message says which)."""


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
