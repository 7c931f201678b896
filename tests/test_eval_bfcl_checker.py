"""The BFCL AST checker on known right and wrong calls from the real BFCL data."""

from __future__ import annotations

import copy

import pytest

from openclaw_rl.evaluation.bfcl_checker import ast_check, openai_name
from openclaw_rl.evaluation.data import bfcl
from openclaw_rl.evaluation.tasks.tool_use import to_openai_tools


def _entry(category: str, entry_id: str) -> dict:
    return next(e for e in bfcl(category) if e["id"] == entry_id)


def _right(entry: dict) -> list[dict]:
    """A correct output: the first allowed value of every parameter that has one."""
    out = []
    for call in entry["ground_truth"]:
        (name, params), = call.items()
        out.append({openai_name(name): {k: next(v for v in vals if v != "")
                                        for k, vals in params.items() if any(v != "" for v in vals)}})
    return out


def _check(entry, output):
    return ast_check(entry["function"], output, entry["ground_truth"], entry["category"])


@pytest.mark.parametrize("category,entry_id", [("simple", "simple_python_0"), ("multiple", "multiple_0"),
                                               ("parallel", "parallel_0")])
def test_right_calls_pass(category, entry_id):
    e = _entry(category, entry_id)
    assert _check(e, _right(e))["valid"]


def test_simple_known_right_and_wrong():
    e = _entry("simple", "simple_python_0")  # calculate_triangle_area(base=10, height=5, unit optional)
    ok = {"calculate_triangle_area": {"base": 10, "height": 5}}
    assert _check(e, [ok])["valid"]
    assert _check(e, [{"calculate_triangle_area": {"base": 10, "height": 5, "unit": "units"}}])["valid"]
    assert _check(e, [{"calculate_triangle_area": {"base": 10, "height": 6}}])["error_type"] == "value_error:others"
    assert _check(e, [{"calculate_triangle_area": {"base": 10}}])["error_type"] == \
        "simple_function_checker:missing_required"
    assert _check(e, [{"calculate_triangle_area": {"base": 10, "height": 5, "color": "red"}}])["error_type"] == \
        "simple_function_checker:unexpected_param"
    assert _check(e, [{"triangle_area": {"base": 10, "height": 5}}])["error_type"] == \
        "simple_function_checker:wrong_func_name"
    assert _check(e, [{"calculate_triangle_area": {"base": "10", "height": 5}}])["error_type"] == "type_error:simple"
    assert _check(e, [{"calculate_triangle_area": {"base": 10.0, "height": 5}}])["error_type"] == "type_error:simple"
    assert _check(e, [{"calculate_triangle_area": {"base": True, "height": 5}}])["error_type"] == "type_error:simple"
    assert _check(e, [ok, ok])["error_type"] == "simple_function_checker:wrong_count"
    assert not _check(e, [])["valid"]
    assert not _check(e, "calculate_triangle_area(base=10, height=5)")["valid"]


def test_strings_are_compared_standardized():
    e = _entry("parallel", "parallel_0")  # spotify.play for Taylor Swift (20) and Maroon 5 (15)
    calls = [{"spotify_play": {"artist": "maroon 5", "duration": 15}},
             {"spotify_play": {"artist": "Taylor-Swift", "duration": 20}}]
    assert _check(e, calls)["valid"]  # any order, case and punctuation-insensitive
    calls[0]["spotify_play"]["artist"] = "Maroon 6"
    assert _check(e, calls)["error_type"] == "parallel_function_checker_no_order:cannot_find_match"
    assert _check(e, calls[1:])["error_type"] == "parallel_function_checker_no_order:wrong_count"


def test_int_is_accepted_for_float():
    e = next(x for x in bfcl("simple") if any(p.get("type") == "float" for f in x["function"]
                                              for p in f["parameters"]["properties"].values()))
    out = _right(e)
    (name, args), = out[0].items()
    floats = [k for k, p in e["function"][0]["parameters"]["properties"].items() if p["type"] == "float" and k in args]
    k = floats[0]
    if float(args[k]).is_integer():
        args[k] = int(args[k])
        assert _check(e, out)["valid"]


def test_multiple_checks_the_answered_function():
    e = _entry("multiple", "multiple_0")
    right = _right(e)
    assert _check(e, right)["valid"]
    other = next(f["name"] for f in e["function"] if openai_name(f["name"]) not in right[0])
    (_, args), = right[0].items()
    assert not _check(e, [{openai_name(other): args}])["valid"]


def test_tools_are_converted_like_bfcl_openai():
    e = _entry("multiple", "multiple_0")
    original = copy.deepcopy(e["function"])
    tools = to_openai_tools(e["function"])
    assert e["function"] == original  # input untouched
    fn = tools[0]["function"]
    assert tools[0]["type"] == "function" and "." not in fn["name"]
    assert fn["parameters"]["type"] == "object"
    assert fn["description"].endswith("Note that the provided function is in Python 3 syntax.")
    types = {p["type"] for t in tools for p in t["function"]["parameters"]["properties"].values()}
    assert types <= {"integer", "number", "string", "boolean", "array", "object"}


def test_agrees_with_bfcl_evals_own_checker(monkeypatch):
    """Same verdicts as ``bfcl_eval``'s ``ast_checker`` on right and perturbed calls of the data.

    The package's checker imports its model registry (every provider SDK) only to learn whether a
    model writes ``.`` as ``_``; that one module is replaced by a registry answering "yes", as for
    OpenAI-style function calling."""
    import random
    import sys
    import types

    registry = types.ModuleType("bfcl_eval.constants.model_config")
    registry.MODEL_CONFIG_MAPPING = type("AnyModel", (dict,), {
        "__getitem__": lambda self, k: types.SimpleNamespace(underscore_to_dot=True)})()
    monkeypatch.setitem(sys.modules, "bfcl_eval.constants.model_config", registry)
    for name in [m for m in sys.modules if m.startswith("bfcl_eval.eval_checker")]:
        monkeypatch.delitem(sys.modules, name)
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval import ast_checker as original

    rng = random.Random(0)

    def perturb(out):
        out = copy.deepcopy(out)
        (name, args), = out[0].items()
        kind = rng.randrange(5)
        if kind == 0 and args:
            k = rng.choice(sorted(args))
            args[k] = args[k] + 1 if isinstance(args[k], (int, float)) and not isinstance(args[k], bool) else "zz"
        elif kind == 1 and args:
            args.pop(rng.choice(sorted(args)))
        elif kind == 2:
            args["bogus"] = 1
        elif kind == 3:
            out.reverse()
        else:
            out = out + out[:1]
        return out

    n = 0
    for category, stem in (("simple", "simple_python"), ("multiple", "multiple"), ("parallel", "parallel")):
        for e in bfcl(category)[:100]:
            for output in (_right(e), perturb(_right(e))):
                theirs = original.ast_checker(copy.deepcopy(e["function"]), copy.deepcopy(output),
                                              e["ground_truth"], Language.PYTHON, stem, "gpt-4o")
                ours = _check(e, copy.deepcopy(output))
                assert theirs["valid"] == ours["valid"], (e["id"], output, theirs, ours)
                n += 1
    assert n == 600
