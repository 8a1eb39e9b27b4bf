"""Structured outputs that parse on every backend: constrained decoding from each signature's JSON schema.

`SchemaAdapter` is DSPy's JSONAdapter plus one step: before each call it turns the signature's output fields into a
bounded JSON schema and asks the server to constrain decoding to it. The wire form depends on the server:
- "llamacpp": llama-cpp-python's `{"type": "json_object", "schema": ...}` (it rejects the json_schema form);
- "json_schema": the OpenAI / vLLM structured-outputs form `{"type": "json_schema", "json_schema": {...}}`;
- "none": no constraint, the prompt alone asks for JSON.
The format goes through `extra_body`, because DSPy's native engine rebuilds `response_format` itself.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import dspy
import pydantic

from prefcraft.errors import ConfigError

Dialect = Literal["llamacpp", "json_schema", "none"]

# Grammar-based decoders enforce string and list bounds but not numeric ones (seen on llama.cpp), so small integer
# ranges become enums. Unbounded text is capped so that a reply always fits in the token budget.
MAX_ENUM_RANGE = 20
CHARS_PER_TOKEN = 3
NUMBER_CHARS = 24


class SchemaAdapter(dspy.JSONAdapter):
    def __init__(self, dialect: Dialect = "llamacpp", max_string_chars: int = 800, max_list_items: int = 8, **kwargs):
        super().__init__(**kwargs)
        if dialect not in ("llamacpp", "json_schema", "none"):
            raise ConfigError(f"unknown structured-output dialect {dialect!r}", "use llamacpp, json_schema or none")
        self.dialect = dialect
        self.max_string_chars = max_string_chars
        self.max_list_items = max_list_items

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: type[dspy.Signature]) -> None:
        if self.dialect == "none":
            return
        schema = output_schema(signature, self.max_string_chars, self.max_list_items)
        lm_kwargs["extra_body"] = {**lm_kwargs.get("extra_body", {}), "response_format": self._wire_format(schema)}
        # The schema bounds the reply's length, so a budget that covers it can never cause a runaway generation.
        needed = math.ceil(max_chars(schema) / CHARS_PER_TOKEN) + 32
        current = lm_kwargs.get("max_tokens") or getattr(lm, "kwargs", {}).get("max_tokens") or 0
        lm_kwargs["max_tokens"] = max(current, needed)

    def _wire_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.dialect == "llamacpp":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "outputs", "schema": schema, "strict": True}}


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
    """An upper bound on the characters of a JSON value that matches a bounded schema."""
    if "enum" in schema:
        return max(len(str(value)) for value in schema["enum"]) + 2
    if "const" in schema:
        return len(str(schema["const"])) + 2
    if "anyOf" in schema:
        return max(max_chars(option) for option in schema["anyOf"])
    kind = schema.get("type")
    if kind == "string":
        return schema["maxLength"] + 2
    if kind == "array":
        return schema["maxItems"] * (max_chars(schema["items"]) + 2) + 2
    if kind == "object":
        properties = schema.get("properties", {})
        return sum(len(name) + 4 + max_chars(value) for name, value in properties.items()) + 2
    return NUMBER_CHARS


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
    kind = node.get("type")
    if kind == "string" and "enum" not in node and "const" not in node:
        node["maxLength"] = min(node.get("maxLength", max_string_chars), max_string_chars)
    elif kind == "array":
        node["maxItems"] = min(node.get("maxItems", max_list_items), max_list_items)
        _bound(node.setdefault("items", {"type": "string"}), max_string_chars, max_list_items)
    elif kind == "integer" and "minimum" in node and "maximum" in node:
        if node["maximum"] - node["minimum"] <= MAX_ENUM_RANGE:
            node["enum"] = list(range(node.pop("minimum"), node.pop("maximum") + 1))
    elif kind == "object":
        properties = node.setdefault("properties", {})
        node["required"] = list(properties)
        node["additionalProperties"] = False
        for value in properties.values():
            _bound(value, max_string_chars, max_list_items)
    for option in node.get("anyOf", []):
        _bound(option, max_string_chars, max_list_items)
