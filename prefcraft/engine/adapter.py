"""Structured outputs that parse on every backend: constrained decoding from each signature's JSON schema.

`SchemaAdapter` is DSPy's JSONAdapter plus one step: before each call it turns the signature's output fields into a
JSON schema and asks the server to constrain decoding to it. Numbers always get a range; strings and lists get the
length bounds the adapter is given (the small-model profile's), and none otherwise: then `max_tokens` alone bounds the
reply. Four dialects:
- "json_schema": the OpenAI structured-outputs form `{"type": "json_schema", "json_schema": {...}}`, which llama.cpp's
  server, vLLM and hosted APIs all take;
- "llguidance": llama.cpp's `grammar` field in llguidance's form, with JSON that has no free whitespace (through the
  json_schema form, llguidance lets a model write any run of spaces and newlines between tokens);
- "vllm": vLLM's `structured_outputs` request field (vLLM 0.12 and later) with the same compact layout as llguidance's,
  asked for in the schema's `x-guidance` options: vLLM's guidance backend reads them (the server prefcraft starts runs
  it); its default xgrammar backend ignores them, and so does vLLM 0.32 a request's own `disable_any_whitespace`;
- "none": no constraint, the prompt alone asks for JSON.
The constraint goes in `response_format`, which DSPy's canonical `Request` carries to the engine; a server's own field
has no place there, so the compact dialects ask in the json_schema form with their options marked in the schema, and
prefcraft's engines (`routing.ServerEngine`, `routing.NativeServerEngine`) move it to the server's field
(`server_field`).
"""

from __future__ import annotations

import copy
import decimal
import json
import math
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args

import dspy
import pydantic

from prefcraft.engine.lm_cache import evict_unparsed_replies
from prefcraft.errors import ConfigError
from prefcraft.settings import Dialect

DIALECTS: tuple[str, ...] = get_args(Dialect)
# No free whitespace, but the one space after a colon or comma that models write by habit: with bare separators the
# embedded model ended its strings early (PrefDisco's answers: 9 characters on average against 60; benchmarks.md).
COMPACT_JSON = {"whitespace_flexible": False, "key_separator": ": ", "item_separator": ", "}
LLGUIDANCE_OPTIONS = "x-guidance"  # the key of llguidance's own options in a JSON schema
LLGUIDANCE_JSON = "%llguidance {}\nstart: %json "  # an llguidance grammar whose start rule is the JSON schema after it
VLLM_FIELD = "x-vllm"  # marks a schema bound for vLLM's structured_outputs field

# Bounds checked against llguidance (the grammar engine of xllamacpp's llama.cpp server). It enforces string, list, map
# and number bounds, but the digits of a number without a range, or of a float without a step, are unbounded: every
# number gets a range, and every non-negative float a step, whatever the length bounds. Small integer ranges become
# enums, which every grammar engine enforces (llama-cpp-python's ignored ranges).
MAX_ENUM_RANGE = 20
CHARS_PER_TOKEN = 3
MAX_SAFE_INTEGER = 2**53 - 1  # the largest integer a double holds exactly
FLOAT_STEP = 0.0001
SIGNED_FLOAT_DECIMALS = 17  # assumed, not enforced: llguidance cannot bound the decimals of a negative float
MAX_KEY_CHARS = 40
KEYWORD_CHARS = {"boolean": len("false"), "null": len("null")}
KEY_LENGTH = re.compile(r"\{1,(\d+)\}\$$")
DSPY_SIGNATURE_COPY = "StringSignature"  # the class name DSPy gives a signature it builds or copies
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
SEPARATOR_SPACE = re.compile(r"([,:]) ")


@dataclass(frozen=True)
class LengthBounds:
    """The length bounds of an output schema; None leaves strings, or lists and maps, unbounded.

    `field_chars` and `field_items` bound one field, keyed `Owner.field`: the signature (or pydantic model) that
    declares it. Such a bound covers every string, or every list and map, inside the field, down to a nested field of
    its own. Under the small-model profile they are `prefcraft.engine.small_model.FieldBounds`: the profile's entries
    over the bounds declared beside the signatures, read as each call's schema is built.
    """

    string_chars: int | None = None
    list_items: int | None = None
    field_chars: Mapping[str, int] = field(default_factory=dict)
    field_items: Mapping[str, int] = field(default_factory=dict)


class SchemaAdapter(dspy.JSONAdapter):
    def __init__(self, dialect: Dialect = "json_schema", bounds: LengthBounds | None = None, **kwargs):
        super().__init__(**kwargs)
        if dialect not in DIALECTS:
            raise ConfigError(f"unknown structured-output dialect {dialect!r}", f"use one of {', '.join(DIALECTS)}")
        self.dialect = dialect
        self.bounds = bounds or LengthBounds()
        self._formats: dict[Hashable, tuple[dict[str, Any], float]] = {}
        self._system_messages: dict[Hashable, str] = {}

    # A reply that does not parse leaves DSPy's cache, so that the next run asks again.
    def __call__(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: Any, inputs: Any) -> Any:
        with evict_unparsed_replies():
            return super().__call__(lm, lm_kwargs, signature, demos, inputs)

    async def acall(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any, demos: Any, inputs: Any) -> Any:
        with evict_unparsed_replies():
            return await super().acall(lm, lm_kwargs, signature, demos, inputs)

    def format_system_message(self, signature: type[dspy.Signature]) -> str:
        """DSPy's system message, built once per signature shape (`_message_key`): building it took as much of a
        call's CPU as sending the call (benchmarks/client_overhead.py)."""
        key = _message_key(signature)
        message = self._system_messages.get(key)
        if message is None:
            if len(self._system_messages) >= MAX_CACHED_FORMATS:
                self._system_messages.clear()
            message = self._system_messages[key] = super().format_system_message(signature)
        return message

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: type[dspy.Signature]) -> None:
        if self.dialect == "none":
            return
        response_format, chars = self._format_of(signature)
        lm_kwargs["response_format"] = copy.deepcopy(response_format)  # the request's own: litellm may edit it
        if math.isfinite(chars):
            # A bounded schema bounds the reply's length, so a budget that covers it never cuts a reply short.
            needed = math.ceil(chars / CHARS_PER_TOKEN) + 32
            current = lm_kwargs.get("max_tokens") or getattr(lm, "kwargs", {}).get("max_tokens") or 0
            lm_kwargs["max_tokens"] = max(current, needed)

    def _format_of(self, signature: type[dspy.Signature]) -> tuple[dict[str, Any], float]:
        """The response format of `signature`'s outputs and the characters its longest reply takes, built once per
        signature shape: building a pydantic model and its schema took more CPU than the rest of a call. Every
        program instance has a signature class of its own (ChainOfThought copies it), so the key is what the schema
        is made of, not the class."""
        key = _schema_key(signature, self.bounds)
        if key is None:
            schema = output_schema(signature, self.bounds)
            return _response_format(self.dialect, schema), max_chars(schema)
        cached = self._formats.get(key)
        if cached is None:
            if len(self._formats) >= MAX_CACHED_FORMATS:
                self._formats.clear()
            schema = output_schema(signature, self.bounds)
            cached = self._formats[key] = (_response_format(self.dialect, schema), max_chars(schema))
        return cached


MAX_CACHED_FORMATS = 256


def _message_key(signature: type[dspy.Signature]) -> Hashable:
    """What DSPy's system message is made of: the instructions and each field's name, type, kind, description and
    prefix (its `json_schema_extra`). Every program instance has a signature class of its own (ChainOfThought copies
    it), so the class is the key only when a type cannot be hashed."""
    fields = tuple((name, info.annotation, repr(info.json_schema_extra))
                   for name, info in signature.model_fields.items())
    key = (signature.instructions, fields)
    try:
        hash(key)
    except TypeError:
        return signature, signature.instructions
    return key


def _schema_key(signature: type[dspy.Signature], bounds: LengthBounds) -> Hashable | None:
    """What `output_schema` reads: the output fields' types and constraints; under per-field bounds, also the input
    fields (they name the owners, `declared_names`) and the bounds in force, which a signature imported later can add
    to. None when a type or constraint cannot be hashed."""
    outputs = tuple((name, field.annotation, *field.metadata) for name, field in signature.output_fields.items())
    per_field: tuple[Any, ...] = ()
    if bounds.field_chars or bounds.field_items:
        per_field = (tuple(signature.input_fields), tuple(sorted(bounds.field_chars.items())),
                     tuple(sorted(bounds.field_items.items())))
    key = (outputs, bounds.string_chars, bounds.list_items, per_field)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _response_format(dialect: Dialect, schema: dict[str, Any]) -> dict[str, Any]:
    if dialect == "llguidance":
        schema = {**schema, LLGUIDANCE_OPTIONS: COMPACT_JSON}
    elif dialect == "vllm":
        schema = {**schema, LLGUIDANCE_OPTIONS: COMPACT_JSON, VLLM_FIELD: True}
    return {"type": "json_schema", "json_schema": {"name": "outputs", "schema": schema, "strict": True}}


def constraint_in_server_field(body: dict[str, Any]) -> None:
    """Move a `response_format` schema marked for a server's own field there, sent in `extra_body` (litellm's form of
    the body; `server_field` says which field)."""
    field = server_field((body.get("response_format") or {}).get("json_schema", {}).get("schema", {}))
    if field is None:
        return
    del body["response_format"]
    body["extra_body"] = {**(body.get("extra_body") or {}), **field}


def server_field(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The server's own request field for a constraint's `schema` marked for one, else None: llguidance's goes to
    llama.cpp's `grammar` (the server reads llguidance's options only from a grammar; its json_schema path lets a model
    write free whitespace), vLLM's to `structured_outputs`, llguidance's options kept in the schema."""
    if VLLM_FIELD in schema:
        return {"structured_outputs": {"json": {key: value for key, value in schema.items() if key != VLLM_FIELD}}}
    if LLGUIDANCE_OPTIONS in schema:
        return {"grammar": LLGUIDANCE_JSON + json.dumps(schema)}
    return None


def asks_vllm_compact(response_format: Mapping[str, Any] | None) -> bool:
    """Whether a request's constraint (DSPy's canonical form, its schema at the top) is the compact `vllm` dialect's."""
    return VLLM_FIELD in (response_format or {}).get("schema", {})


def has_free_whitespace(reply: str) -> bool:
    """Whether a JSON reply has whitespace outside its strings beyond the one space after a colon or comma."""
    outside_strings = JSON_STRING.sub('""', reply)
    return re.search(r"\s", SEPARATOR_SPACE.sub(r"\1", outside_strings)) is not None


def output_schema(signature: type[dspy.Signature], bounds: LengthBounds | None = None) -> dict[str, Any]:
    """A closed JSON schema of the signature's output fields: every number bounded, strings and lists as `bounds`
    say."""
    # Constraints written as `Annotated[int, Field(ge=1, le=5)]` live in the field's metadata, not its annotation.
    fields = {
        name: (Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation, ...)
        for name, field in signature.output_fields.items()
    }
    model = pydantic.create_model("Outputs", __config__=pydantic.ConfigDict(extra="forbid"), **fields)
    schema = _inline_refs(model.model_json_schema(), model.model_json_schema().get("$defs", {}))
    schema.pop("$defs", None)
    bounds = bounds or LengthBounds()
    owners = declared_names(signature) if bounds.field_chars or bounds.field_items else set()
    _Bounder(bounds).bound(schema, bounds.string_chars, bounds.list_items, owners)
    return schema


def declared_names(signature: type[dspy.Signature]) -> set[str]:
    """The names of the signature classes that `signature` was made from. DSPy copies a signature into a class named
    StringSignature when a program sets its instructions, adds a reasoning field or loads a compiled state; the copy
    keeps the fields, so it is known by them."""
    shape = _fields_shape(signature)
    declared = (cls for cls in _subclasses(dspy.Signature) if cls.__name__ != DSPY_SIGNATURE_COPY)
    return {cls.__name__ for cls in declared if _fields_shape(cls) == shape}


def _fields_shape(signature: type[dspy.Signature]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    outputs = tuple(name for name in signature.output_fields if name != "reasoning")  # ChainOfThought's addition
    return tuple(signature.input_fields), outputs


def _subclasses(cls: type) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]


def max_chars(schema: dict[str, Any]) -> float:
    """An upper bound on the characters of a compact JSON value that matches the schema: infinite where a string, list
    or map of it has no bound."""
    if "enum" in schema:
        return max(len(_compact(value)) for value in schema["enum"])
    if "const" in schema:
        return len(_compact(schema["const"]))
    if "anyOf" in schema:
        return max(max_chars(option) for option in schema["anyOf"])
    kind = schema["type"]
    if kind == "string":
        return schema.get("maxLength", math.inf) + 2
    if kind == "array":
        return schema.get("maxItems", math.inf) * (max_chars(schema["items"]) + 2) + 2
    if kind == "object":
        return _object_chars(schema)
    if kind in ("integer", "number"):
        return _number_chars(schema)
    return KEYWORD_CHARS[kind]


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _object_chars(schema: dict[str, Any]) -> float:
    """Braces, the named properties, and as many map entries as maxProperties allows, each with its quotes, colon and
    comma and the space after each (COMPACT_JSON's separators)."""
    named = sum(len(name) + 6 + max_chars(value) for name, value in schema.get("properties", {}).items())
    entries = schema.get("patternProperties", {})
    entry = max((_key_chars(pattern) + 6 + max_chars(value) for pattern, value in entries.items()), default=0)
    return named + schema.get("maxProperties", math.inf if entries else 0) * entry + 2


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


class _Bounder:
    """Bounds a schema in place. Each subschema is bounded by the string and list bounds in force where it sits: the
    defaults, or those of the field it is in (None: unbounded)."""

    def __init__(self, bounds: LengthBounds):
        self.bounds = bounds

    def bound(self, node: dict[str, Any], chars: int | None, items: int | None, owners: set[str] | None = None) -> None:
        """`owners`: the names that declare an object's properties (the signature's for the outputs, else the title
        pydantic gives a model)."""
        owners = owners or {node.get("title", "")}
        node.pop("title", None)
        if not node.keys() & {"type", "enum", "const", "anyOf"}:
            raise ConfigError(
                "an output of type Any has no bound, so it could run past the token budget",
                "give every output field, list item and dict value a concrete type",
            )
        kind = None if "enum" in node or "const" in node else node.get("type")  # a literal is bounded already
        if kind == "string":
            _tighten(node, "maxLength", chars)
        elif kind == "array":
            _tighten(node, "maxItems", items)
            self.bound(node.setdefault("items", {"type": "string"}), chars, items)
        elif kind == "integer":
            _bound_integer(node)
        elif kind == "number":
            _bound_number(node)
        elif kind == "object" and node.get("additionalProperties", False) is not False and not node.get("properties"):
            self._bound_map(node, chars, items)
        elif kind == "object":
            self._close_object(node, chars, items, owners)
        for option in node.get("anyOf", []):
            self.bound(option, chars, items)

    def _bound_map(self, node: dict[str, Any], chars: int | None, items: int | None) -> None:
        """A dict[str, X]: keys of bounded length, at most `items` entries, and values bounded like any field."""
        values = node.pop("additionalProperties")
        values = {} if values is True else values  # dict[str, Any]: in JSON schema, true is the schema of any value
        self.bound(values, chars, items)
        node["patternProperties"] = {_key_pattern(min(MAX_KEY_CHARS, chars or MAX_KEY_CHARS)): values}
        node["additionalProperties"] = False
        _tighten(node, "maxProperties", items)

    def _close_object(self, node: dict[str, Any], chars: int | None, items: int | None, owners: set[str]) -> None:
        properties = node.setdefault("properties", {})
        node["required"] = list(properties)
        node["additionalProperties"] = False
        for name, value in properties.items():
            keys = [f"{owner}.{name}" for owner in sorted(owners)]
            field_chars = next((self.bounds.field_chars[key] for key in keys if key in self.bounds.field_chars), chars)
            field_items = next((self.bounds.field_items[key] for key in keys if key in self.bounds.field_items), items)
            self.bound(value, field_chars, field_items)


def _tighten(node: dict[str, Any], keyword: str, bound: int | None) -> None:
    """Sets a length keyword to `bound`, keeping a tighter one that the node declares itself."""
    if bound is not None:
        node[keyword] = min(node.get(keyword, bound), bound)


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


def _key_pattern(max_key_chars: int) -> str:
    # llguidance rejects propertyNames, so a pattern bounds the keys. Leaving out the characters that JSON escapes makes
    # each key character one character of output.
    return rf'^[^"\\\x00-\x1f\x7f]{{1,{max_key_chars}}}$'
