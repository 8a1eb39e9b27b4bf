"""Structured outputs that parse on every backend: constrained decoding from each signature's JSON schema.

`SchemaAdapter` is DSPy's JSONAdapter plus one step: before each call it turns the signature's output fields into a
bounded JSON schema and asks the server to constrain decoding to it. Two dialects:
- "json_schema": the OpenAI structured-outputs form `{"type": "json_schema", "json_schema": {...}}`, which llama.cpp's
  server, vLLM and hosted APIs all take;
- "none": no constraint, the prompt alone asks for JSON.
The format goes through `extra_body`, because DSPy's native engine rebuilds `response_format` itself.
"""

from __future__ import annotations

import decimal
import json
import math
import re
from typing import Annotated, Any, Literal

import dspy
import pydantic

from prefcraft.errors import ConfigError

Dialect = Literal["json_schema", "none"]

# Bounds that keep every reply inside the token budget, checked against llguidance (the grammar engine of xllamacpp's
# llama.cpp server). It enforces string, list, map and number bounds, but the digits of a number without a range, or of
# a float without a step, are unbounded: every number gets a range, and every non-negative float a step. Small integer
# ranges become enums, which every grammar engine enforces (llama-cpp-python's ignored ranges).
MAX_ENUM_RANGE = 20
CHARS_PER_TOKEN = 3
MAX_SAFE_INTEGER = 2**53 - 1  # the largest integer a double holds exactly
FLOAT_STEP = 0.0001
SIGNED_FLOAT_DECIMALS = 17  # assumed, not enforced: llguidance cannot bound the decimals of a negative float
MAX_KEY_CHARS = 40
KEYWORD_CHARS = {"boolean": len("false"), "null": len("null")}
KEY_LENGTH = re.compile(r"\{1,(\d+)\}\$$")


class SchemaAdapter(dspy.JSONAdapter):
    def __init__(
        self, dialect: Dialect = "json_schema", max_string_chars: int = 800, max_list_items: int = 8, **kwargs
    ):
        super().__init__(**kwargs)
        if dialect not in ("json_schema", "none"):
            raise ConfigError(f"unknown structured-output dialect {dialect!r}", "use json_schema or none")
        self.dialect = dialect
        self.max_string_chars = max_string_chars
        self.max_list_items = max_list_items

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: type[dspy.Signature]) -> None:
        if self.dialect == "none":
            return
        schema = output_schema(signature, self.max_string_chars, self.max_list_items)
        response_format = {"type": "json_schema", "json_schema": {"name": "outputs", "schema": schema, "strict": True}}
        lm_kwargs["extra_body"] = {**lm_kwargs.get("extra_body", {}), "response_format": response_format}
        # The schema bounds the reply's length, so a budget that covers it can never cause a runaway generation.
        needed = math.ceil(max_chars(schema) / CHARS_PER_TOKEN) + 32
        current = lm_kwargs.get("max_tokens") or getattr(lm, "kwargs", {}).get("max_tokens") or 0
        lm_kwargs["max_tokens"] = max(current, needed)


def output_schema(signature: type[dspy.Signature], max_string_chars: int, max_list_items: int) -> dict[str, Any]:
    """A closed JSON schema of the signature's output fields, with every string, list and small integer bounded."""
    # Constraints written as `Annotated[int, Field(ge=1, le=5)]` live in the field's metadata, not its annotation.
    fields = {
        name: (Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation, ...)
        for name, field in signature.output_fields.items()
    }
    model = pydantic.create_model("Outputs", __config__=pydantic.ConfigDict(extra="forbid"), **fields)
    schema = _inline_refs(model.model_json_schema(), model.model_json_schema().get("$defs", {}))
    schema.pop("$defs", None)
    _bound(schema, max_string_chars, max_list_items)
    return schema


def max_chars(schema: dict[str, Any]) -> int:
    """An upper bound on the characters of a compact JSON value that matches a bounded schema."""
    if "enum" in schema:
        return max(len(_compact(value)) for value in schema["enum"])
    if "const" in schema:
        return len(_compact(schema["const"]))
    if "anyOf" in schema:
        return max(max_chars(option) for option in schema["anyOf"])
    kind = schema["type"]
    if kind == "string":
        return schema["maxLength"] + 2
    if kind == "array":
        return schema["maxItems"] * (max_chars(schema["items"]) + 2) + 2
    if kind == "object":
        return _object_chars(schema)
    if kind in ("integer", "number"):
        return _number_chars(schema)
    return KEYWORD_CHARS[kind]


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _object_chars(schema: dict[str, Any]) -> int:
    """Braces, the named properties, and as many map entries as maxProperties allows, each with its quotes, colon and
    comma."""
    named = sum(len(name) + 4 + max_chars(value) for name, value in schema.get("properties", {}).items())
    entry = max(
        (_key_chars(pattern) + 4 + max_chars(value) for pattern, value in schema.get("patternProperties", {}).items()),
        default=0,
    )
    return named + schema.get("maxProperties", 0) * entry + 2


def _key_chars(pattern: str) -> int:
    return int(KEY_LENGTH.search(pattern).group(1))


def _number_chars(schema: dict[str, Any]) -> int:
    """Sign, integer digits, point and decimals of the longest number that the range and step allow."""
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    sign = 1 if low < 0 else 0
    decimals = _decimals(schema)
    return sign + len(str(math.floor(max(abs(low), abs(high))))) + (decimals + 1 if decimals else 0)


def _decimals(schema: dict[str, Any]) -> int:
    if schema["type"] == "integer":
        return 0
    if "multipleOf" in schema:
        return max(0, -decimal.Decimal(str(schema["multipleOf"])).normalize().as_tuple().exponent)
    return SIGNED_FLOAT_DECIMALS


def _inline_refs(node: Any, definitions: dict[str, Any]) -> Any:
    # Grammar converters handle $ref unevenly; signatures are small, so inline every definition.
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline_refs(definitions[node["$ref"].rsplit("/", 1)[-1]], definitions)
        return {key: _inline_refs(value, definitions) for key, value in node.items() if key != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(value, definitions) for value in node]
    return node


def _bound(node: dict[str, Any], max_string_chars: int, max_list_items: int) -> None:
    node.pop("title", None)
    if not node.keys() & {"type", "enum", "const", "anyOf"}:
        raise ConfigError(
            "an output of type Any has no bound, so it could run past the token budget",
            "give every output field, list item and dict value a concrete type",
        )
    kind = None if "enum" in node or "const" in node else node.get("type")  # a literal is bounded already
    if kind == "string":
        node["maxLength"] = min(node.get("maxLength", max_string_chars), max_string_chars)
    elif kind == "array":
        node["maxItems"] = min(node.get("maxItems", max_list_items), max_list_items)
        _bound(node.setdefault("items", {"type": "string"}), max_string_chars, max_list_items)
    elif kind == "integer":
        _bound_integer(node)
    elif kind == "number":
        _bound_number(node)
    elif kind == "object" and node.get("additionalProperties", False) is not False and not node.get("properties"):
        _bound_map(node, max_string_chars, max_list_items)
    elif kind == "object":
        _close_object(node, max_string_chars, max_list_items)
    for option in node.get("anyOf", []):
        _bound(option, max_string_chars, max_list_items)


def _bound_integer(node: dict[str, Any]) -> None:
    low, high = _integer_range(node)
    if high - low <= MAX_ENUM_RANGE:
        node["enum"] = list(range(low, high + 1))
    else:
        node.update(minimum=low, maximum=high)


def _integer_range(node: dict[str, Any]) -> tuple[int, int]:
    """The node's inclusive range within the safe integers; its bounds are taken out of the node."""
    low = math.ceil(node.pop("minimum", -MAX_SAFE_INTEGER))
    high = math.floor(node.pop("maximum", MAX_SAFE_INTEGER))
    if "exclusiveMinimum" in node:
        low = max(low, math.floor(node.pop("exclusiveMinimum")) + 1)
    if "exclusiveMaximum" in node:
        high = min(high, math.ceil(node.pop("exclusiveMaximum")) - 1)
    return max(low, -MAX_SAFE_INTEGER), min(high, MAX_SAFE_INTEGER)


def _bound_number(node: dict[str, Any]) -> None:
    if "minimum" not in node and "exclusiveMinimum" not in node:
        node["minimum"] = -MAX_SAFE_INTEGER
    if "maximum" not in node and "exclusiveMaximum" not in node:
        node["maximum"] = MAX_SAFE_INTEGER
    # llguidance before 1.8.0 (xllamacpp's) matches no negative number under multipleOf: signed floats get no step.
    if node.get("minimum", node.get("exclusiveMinimum")) >= 0:
        node.setdefault("multipleOf", FLOAT_STEP)


def _bound_map(node: dict[str, Any], max_string_chars: int, max_list_items: int) -> None:
    """A dict[str, X]: keys of bounded length, at most max_list_items entries, and values bounded like any field."""
    values = node.pop("additionalProperties")
    values = {} if values is True else values  # dict[str, Any]: in JSON schema, true is the schema of any value
    _bound(values, max_string_chars, max_list_items)
    node["patternProperties"] = {_key_pattern(min(MAX_KEY_CHARS, max_string_chars)): values}
    node["additionalProperties"] = False
    node["maxProperties"] = min(node.get("maxProperties", max_list_items), max_list_items)


def _key_pattern(max_key_chars: int) -> str:
    # llguidance rejects propertyNames, so a pattern bounds the keys. Leaving out the characters that JSON escapes makes
    # each key character one character of output.
    return rf'^[^"\\\x00-\x1f\x7f]{{1,{max_key_chars}}}$'


def _close_object(node: dict[str, Any], max_string_chars: int, max_list_items: int) -> None:
    properties = node.setdefault("properties", {})
    node["required"] = list(properties)
    node["additionalProperties"] = False
    for value in properties.values():
        _bound(value, max_string_chars, max_list_items)
