"""JSON schemas as the server enforces them: objects are closed unless they say otherwise.

A JSON schema (https://json-schema.org/draft/2020-12) lets an object carry keys it does not
declare unless it says ``"additionalProperties": false``; most tools and output types (LangChain,
LiteLLM, hand-written functions) do not say it, and a model under constrained decoding then may
add keys of its own (``{"tz": "UTC", "destination": "Paris"}``). The server reads a declared
``properties`` list as the whole list: :func:`closed_schema` adds ``"additionalProperties": false``
to every object schema that declares ``properties`` and says nothing about other keys. A schema
that allows other keys explicitly (``additionalProperties`` true or a schema,
``patternProperties``, ``unevaluatedProperties``) keeps them; an object combined with ``allOf`` /
``anyOf`` / ``oneOf`` / ``$ref`` is left open (its keys may be declared in the other part).
"""

from __future__ import annotations

from typing import Any

#: keywords whose value is one schema
_ONE = ("items", "additionalItems", "contains", "not", "if", "then", "else", "additionalProperties",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties")
#: keywords whose value is a list of schemas
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
#: keywords whose value maps names to schemas
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
#: an object with one of these is left open (it allows other keys, or its keys are declared elsewhere)
_OPEN = ("additionalProperties", "patternProperties", "unevaluatedProperties", "allOf", "anyOf", "oneOf", "$ref")


def closed_schema(schema: Any) -> Any:
    """A copy of ``schema`` whose objects admit only the keys they declare (see the module
    docstring); anything that is not a schema object is returned unchanged."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ONE:
            out[key] = closed_schema(value)
        elif key in _LIST and isinstance(value, list):
            out[key] = [closed_schema(s) for s in value]
        elif key in _MAP and isinstance(value, dict):
            out[key] = {name: closed_schema(s) for name, s in value.items()}
        else:  # enum, const, default, examples, ...: values, not schemas
            out[key] = value
    if isinstance(out.get("properties"), dict) and not any(k in out for k in _OPEN):
        out["additionalProperties"] = False
    return out
