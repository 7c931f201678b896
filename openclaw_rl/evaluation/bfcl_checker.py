"""BFCL's AST checker for Python function calls (simple, multiple, parallel categories).

``bfcl-eval``'s own checker (``bfcl_eval.eval_checker.ast_eval.ast_checker``) does not import
here: it imports the model registry, which imports every provider SDK (anthropic, cohere, ...).
This module applies the same rules to the same data, for Python (Patil et al., "The Berkeley
Function Calling Leaderboard", 2024; ``ast_checker.py`` of bfcl-eval 2026.3.23):

* simple: exactly one call, of the described function; ``multiple``: exactly one call, of the
  function named by the possible answer; ``parallel``: as many calls as answers, matched in any order;
* every required parameter present, no parameter outside the schema or the possible answer, every
  possible-answer parameter without ``""`` among its values present;
* types as in the schema (an int is accepted for a float; a value of the possible answer's type
  where the schema type differs counts as a variable); strings compared after removing spaces and
  ``,./-_*^`` and lowercasing; lists, dicts and lists of dicts compared element-wise the same way.

A model output is ``[{function_name: {param: value}}]``. Function names containing ``.`` are
compared with ``_`` instead, as BFCL does for OpenAI-style function calling (names must match
``^[a-zA-Z0-9_-]{1,64}$``).
"""

from __future__ import annotations

import re

PYTHON_TYPE_MAPPING = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list,
                       "tuple": list, "dict": dict, "any": str}
PYTHON_NESTED_TYPE_CHECK_LIST = ("array", "tuple")


def _fail(error: str, error_type: str) -> dict:
    return {"valid": False, "error": [error], "error_type": error_type}


def openai_name(name: str) -> str:
    """BFCL's name conversion for OpenAI-style function calling: ``.`` becomes ``_``."""
    return re.sub(r"\.", "_", name)


def find_description(func_descriptions, name: str):
    """The schema named ``name`` in a list of schemas (or the single schema given), else None."""
    if isinstance(func_descriptions, list):
        return next((f for f in func_descriptions if f["name"] == name), None)
    return func_descriptions


def _possible_answer_type(possible_answer: list):
    return next((type(a) for a in possible_answer if a != ""), None)


def type_checker(param, value, possible_answer: list, expected_type_description: str, expected_type_converted,
                 nested_type_converted) -> dict:
    """BFCL's ``type_checker``: ``{"valid", "error", "is_variable"}`` (nested types one level deep)."""
    result = {"valid": True, "error": [], "is_variable": False, "error_type": "type_error:simple"}
    is_variable = False
    pa_type = _possible_answer_type(possible_answer)
    if pa_type is not None and pa_type != expected_type_converted:
        is_variable = True
    if type(value) == expected_type_converted:  # noqa: E721  (exact type, as BFCL: bool is not int)
        if nested_type_converted is None:
            result["is_variable"] = is_variable
            return result
        for item in possible_answer:
            flag = True
            if type(item) == list:  # noqa: E721
                for value_item in value:
                    if not type_checker(param, value_item, item, str(nested_type_converted),
                                        nested_type_converted, None)["valid"]:
                        flag = False
                        break
            if flag:
                return {"valid": True, "error": [], "is_variable": is_variable}
        result.update(valid=False, error_type="type_error:nested", error=[
            f"Nested type checking failed for parameter {param!r}. Expected outer type "
            f"{expected_type_description} with inner type {nested_type_converted}. Parameter value: {value!r}."])
    if pa_type is not None and type(value) == pa_type:  # noqa: E721
        result["is_variable"] = True
        return result
    result["valid"] = False
    result["error"].append(f"Incorrect type for parameter {param!r}. Expected type {expected_type_description}, "
                           f"got {type(value).__name__}. Parameter value: {value!r}.")
    result["error_type"] = "type_error:simple"
    return result


def standardize_string(s: str) -> str:
    """Remove spaces and ``,./-_*^``, lowercase, and turn ``'`` into ``"`` (BFCL's string rule)."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", s).lower().replace("'", '"')


def _std(v):
    return standardize_string(v) if type(v) == str else v  # noqa: E721


def string_checker(param, model_output: str, possible_answer: list) -> dict:
    """The standardized string must equal one standardized possible answer."""
    if _std(model_output) not in [standardize_string(a) for a in possible_answer if type(a) == str]:  # noqa: E721
        return _fail(f"Invalid value for parameter {param!r}: {model_output!r}. Expected one of {possible_answer}. "
                     "Case insensitive.", "value_error:string")
    return {"valid": True, "error": []}


def list_checker(param, model_output: list, possible_answer: list) -> dict:
    """The list (strings standardized) must equal one possible list."""
    out = [_std(v) for v in model_output]
    if out not in [[_std(v) for v in answer] for answer in possible_answer]:
        return _fail(f"Invalid value for parameter {param!r}: {model_output!r}. Expected one of {possible_answer}.",
                     "value_error:list/tuple")
    return {"valid": True, "error": []}


def dict_checker(param, model_output: dict, possible_answers: list) -> dict:
    """Each key must be allowed and its (standardized) value among the allowed; keys without ``""`` required."""
    result = {"valid": False, "error": [], "error_type": "dict_checker:unclear"}
    for possible in possible_answers:
        if possible == "":
            continue
        result = {"valid": False, "error": [], "error_type": "dict_checker:unclear"}
        flag = True
        for key, value in model_output.items():
            if key not in possible:
                result.update(error=[f"Unexpected dict key parameter: '{key}'."], error_type="value_error:dict_key")
                flag = False
                break
            allowed = [_std(v) for v in possible[key]]
            if _std(value) not in allowed:
                result.update(error=[f"Invalid value for parameter {key!r}: {value!r}. Expected one of {allowed}."],
                              error_type="value_error:dict_value")
                flag = False
                break
        for key, value in possible.items():
            if key not in model_output and "" not in value:
                result.update(error=[f"Missing dict key parameter: '{key}'."], error_type="value_error:dict_key")
                flag = False
                break
        if flag:
            return {"valid": True, "error": []}
    return result


def list_dict_checker(param, model_output: list, possible_answers: list) -> dict:
    """A list of dicts: same length as one possible list, each dict passing :func:`dict_checker` in order."""
    result = {"valid": False, "error": [], "error_type": "list_dict_checker:unclear"}
    for answer in possible_answers:
        if len(model_output) != len(answer):
            result = _fail("Wrong number of dictionaries in the list.", "value_error:list_dict_count")
            continue
        flag = True
        for i, item in enumerate(model_output):
            result = dict_checker(param, item, [answer[i]])
            if not result["valid"]:
                flag = False
                break
        if flag:
            return {"valid": True, "error": []}
    return result


def simple_function_checker(func_description: dict, model_output: dict, possible_answer: dict) -> dict:
    """Check one call ``{name: {param: value}}`` against one possible answer ``{name: {param: [values]}}``."""
    possible_answer = list(possible_answer.values())[0]
    func_name = openai_name(func_description["name"])
    param_details = func_description["parameters"]["properties"]
    required = func_description["parameters"].get("required", [])
    if func_name not in model_output:
        return _fail(f"Function name {func_name!r} not found in model output.",
                     "simple_function_checker:wrong_func_name")
    model_params = model_output[func_name]
    if not isinstance(model_params, dict):
        return _fail(f"Arguments of {func_name!r} are not an object.", "simple_function_checker:bad_arguments")
    for param in required:
        if param not in model_params:
            return _fail(f"Missing required parameter: {param!r}.", "simple_function_checker:missing_required")
    for param, value in model_params.items():
        if param not in param_details or param not in possible_answer:
            return _fail(f"Unexpected parameter: {param!r}.", "simple_function_checker:unexpected_param")
        expected_desc = param_details[param]["type"]
        expected = PYTHON_TYPE_MAPPING[expected_desc]
        nested = None
        if expected_desc in PYTHON_NESTED_TYPE_CHECK_LIST:
            nested = PYTHON_TYPE_MAPPING[param_details[param]["items"]["type"]]
        if expected_desc == "tuple" and type(value) == tuple:  # noqa: E721
            value = list(value)
        if expected_desc == "float" and type(value) == int:  # noqa: E721  (Python's int -> float)
            value = float(value)
        checked = type_checker(param, value, possible_answer[param], expected_desc, expected, nested)
        if not checked["valid"]:
            return checked
        if not checked["is_variable"]:
            if expected == dict:
                sub = dict_checker(param, value, possible_answer[param])
            elif expected == list and nested == dict:
                sub = list_dict_checker(param, value, possible_answer[param])
            elif expected == str:
                sub = string_checker(param, value, possible_answer[param])
            elif expected == list:
                sub = list_checker(param, value, possible_answer[param])
            else:
                sub = None
            if sub is not None:
                if not sub["valid"]:
                    return sub
                continue
        if value not in possible_answer[param]:
            return _fail(f"Invalid value for parameter {param!r}: {value!r}. Expected one of "
                         f"{possible_answer[param]}.", "value_error:others")
    for param in possible_answer:
        if param not in model_params and "" not in possible_answer[param]:
            return _fail(f"Optional parameter {param!r} not provided and not marked as optional.",
                         "simple_function_checker:missing_optional")
    return {"valid": True, "error": []}


def parallel_function_checker_no_order(func_descriptions: list, model_output: list, possible_answers: list) -> dict:
    """Every possible answer must match a distinct call, in any order; counts must be equal."""
    if len(model_output) != len(possible_answers):
        return _fail("Wrong number of functions.", "parallel_function_checker_no_order:wrong_count")
    matched: list[int] = []
    for i, answer in enumerate(possible_answers):
        description = find_description(func_descriptions, list(answer.keys())[0])
        errors = []
        result = {"valid": False}
        for index, call in enumerate(model_output):
            if index in matched:
                continue
            result = simple_function_checker(description, call, answer)
            if result["valid"]:
                matched.append(index)
                break
            errors.append({f"Model Result Index {index}": result["error"]})
        if not result["valid"]:
            return {"valid": False, "error": [f"Could not find a matching function for index {i} of possible "
                                              "answers.", *errors],
                    "error_type": "parallel_function_checker_no_order:cannot_find_match"}
    return {"valid": True, "error": []}


def multiple_function_checker(func_descriptions: list, model_output: list, possible_answers: list) -> dict:
    """Exactly one call, checked against the function the (single) possible answer names."""
    if len(model_output) != len(possible_answers):
        return _fail("Wrong number of functions.", "multiple_function_checker:wrong_count")
    description = find_description(func_descriptions, list(possible_answers[0].keys())[0])
    return simple_function_checker(description, model_output[0], possible_answers[0])


def ast_check(func_descriptions: list, model_output: list, possible_answer: list, category: str) -> dict:
    """BFCL's ``ast_checker`` for Python.

    Args:
        func_descriptions: the entry's ``function`` list (BFCL schemas, original names).
        model_output: the model's calls ``[{name: {param: value}}]`` (names with ``_`` for ``.``).
        possible_answer: the entry's ``ground_truth``.
        category: ``simple``, ``multiple`` or ``parallel`` (any name containing these words).

    Returns:
        ``{"valid": bool, "error": [...], "error_type": str}`` (``error_type`` only when invalid).
    """
    if not isinstance(model_output, list) or not all(isinstance(c, dict) and len(c) == 1 for c in model_output):
        return _fail("Model output is not a list of function calls.", "ast_decoder:decoder_wrong_output_format")
    if "parallel" in category:
        return parallel_function_checker_no_order(func_descriptions, model_output, possible_answer)
    if "multiple" in category:
        return multiple_function_checker(func_descriptions, model_output, possible_answer)
    if len(model_output) != 1:
        return _fail("Wrong number of functions.", "simple_function_checker:wrong_count")
    return simple_function_checker(func_descriptions[0], model_output[0], possible_answer[0])
