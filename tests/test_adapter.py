import decimal
import json
import math
import re
from typing import Annotated, Any, Literal

import dspy
import pydantic
import pytest
from dspy.utils.dummies import DummyLM

import prefcraft.engine.adapter as adapter_module
from prefcraft.engine.adapter import (
    CHARS_PER_TOKEN,
    COMPACT_JSON,
    MAX_SAFE_INTEGER,
    LengthBounds,
    SchemaAdapter,
    constraint_in_server_field,
    declared_names,
    has_free_whitespace,
    max_chars,
    output_schema,
)
from prefcraft.engine.lm import build_adapter, build_lm
from prefcraft.errors import ConfigError
from prefcraft.settings import SmallModelProfile
from prefcraft.signatures.judge import JudgePreference


class Dish(pydantic.BaseModel):
    name: str
    ingredients: list[str]


class Menu(pydantic.BaseModel):
    title: str
    main: Dish
    spicy: bool


class PlanMenu(dspy.Signature):
    """Plan a small menu for the occasion."""

    occasion: str = dspy.InputField(desc="what the meal is for")
    menu: Menu = dspy.OutputField(desc="the menu")


class ListTopics(dspy.Signature):
    """List the topics the text is about, as short phrases."""

    text: str = dspy.InputField(desc="the text")
    topics: list[str] = dspy.OutputField(desc="two or three short topic phrases")


class GradeAnswer(dspy.Signature):
    """Grade how well the answer answers the question, from 1 (not at all) to 5 (perfectly)."""

    question: str = dspy.InputField(desc="the question")
    answer: str = dspy.InputField(desc="the answer")
    grade: Literal[1, 2, 3, 4, 5] = dspy.OutputField(desc="the grade, 1 to 5")


class Bounded(dspy.Signature):
    """Every kind of output the schema bounds."""

    question: str = dspy.InputField()
    note: str = dspy.OutputField()
    short: Annotated[str, pydantic.Field(max_length=40)] = dspy.OutputField()
    tags: list[str] = dspy.OutputField()
    few: Annotated[list[str], pydantic.Field(max_length=3)] = dspy.OutputField()
    stars: Annotated[int, pydantic.Field(ge=1, le=5)] = dspy.OutputField()
    year: Annotated[int, pydantic.Field(ge=1900, le=2100)] = dspy.OutputField()
    count: int = dspy.OutputField()
    maybe: str | None = dspy.OutputField()


class CheckedCriterion(pydantic.BaseModel):
    criterion: str
    met: bool
    note: str | None = None


class Typed(dspy.Signature):
    """Every output type of the personalization components."""

    question: str = dspy.InputField()
    weights: dict[str, float] = dspy.OutputField()
    counts: dict[str, int] = dspy.OutputField()
    labels: dict[str, str] = dspy.OutputField()
    few_counts: Annotated[dict[str, int], pydantic.Field(max_length=2)] = dspy.OutputField()
    checklist: list[CheckedCriterion] = dspy.OutputField()
    menu: Menu | None = dspy.OutputField()
    done: bool = dspy.OutputField()
    score: Annotated[float, pydantic.Field(ge=0, le=1)] = dspy.OutputField()
    margin: Annotated[float, pydantic.Field(gt=-1, lt=1)] = dspy.OutputField()
    amount: float = dspy.OutputField()
    option: Annotated[int, pydantic.Field(gt=0, lt=4)] = dspy.OutputField()
    level: Literal[0, 1, 2] = dspy.OutputField()
    action: Literal["ask", "answer"] = dspy.OutputField()


# A reply with every Typed field, as the server would send it.
TYPED_REPLY = {
    "weights": {"concise": 0.75, "formal": -0.5, "humor": 1.0},
    "counts": {"questions": 3, "follow-ups": -1},
    "labels": {"tone": "warm", "语言": "中文"},
    "few_counts": {"a": 1},
    "checklist": [
        {"criterion": "answers the question", "met": True, "note": None},
        {"criterion": "uses metric units", "met": False, "note": "gives miles"},
    ],
    "menu": {"title": "Brunch", "main": {"name": "pancakes", "ingredients": ["flour", "milk"]}, "spicy": False},
    "done": True,
    "score": 0.8125,
    "margin": -0.25,
    "amount": 1234.5,
    "option": 2,
    "level": 0,
    "action": "ask",
}

# The JSON schema keywords that llguidance (the grammar engine of xllamacpp's server) implements, plus the annotations
# it ignores; any other keyword fails the request with "Unimplemented keys" (propertyNames, for one).
LLGUIDANCE_KEYWORDS = {
    "anyOf", "oneOf", "allOf", "$ref", "const", "enum", "type", "items", "additionalItems", "prefixItems", "minItems",
    "maxItems", "properties", "additionalProperties", "patternProperties", "required", "minProperties",
    "maxProperties", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "title", "description", "default", "examples",
}  # fmt: skip


def properties(signature: type[dspy.Signature], **bounds: int) -> dict[str, Any]:
    return output_schema(signature, LengthBounds(bounds.get("chars", 800), bounds.get("items", 8)))["properties"]


def map_entries(schema: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The key pattern and value schema of a dict field."""
    [(pattern, values)] = schema["patternProperties"].items()
    return pattern, values


def longest_text(schema: dict[str, Any]) -> str:
    """The longest compact JSON text a bounded schema allows, with the compact form's separators (a space after each
    colon and comma)."""
    if "enum" in schema or "const" in schema:
        literals = schema.get("enum", [schema.get("const")])
        return max((json.dumps(value, ensure_ascii=False) for value in literals), key=len)
    if "anyOf" in schema:
        return max((longest_text(option) for option in schema["anyOf"]), key=len)
    kind = schema["type"]
    if kind == "string":
        return json.dumps("x" * schema["maxLength"])
    if kind == "array":
        return "[" + ", ".join([longest_text(schema["items"])] * schema["maxItems"]) + "]"
    if kind == "object":
        named = [f"{json.dumps(name)}: {longest_text(value)}" for name, value in schema.get("properties", {}).items()]
        entries = [f'"{longest_key(pattern)}": {longest_text(value)}' for pattern, value in
                   schema.get("patternProperties", {}).items()] * schema.get("maxProperties", 0)  # fmt: skip
        return "{" + ", ".join(named + entries) + "}"
    if kind == "boolean":
        return "false"
    if kind == "null":
        return "null"
    return longest_number(schema)


def longest_key(pattern: str) -> str:
    return next(key for key in ("k" * length for length in range(200, 0, -1)) if re.fullmatch(pattern, key))


def longest_number(schema: dict[str, Any]) -> str:
    """The range's widest end (a step inside an exclusive one), with every decimal the step allows: 17 where the grammar
    bounds none."""
    if schema["type"] == "integer":
        decimals = 0
    else:
        decimals = len(str(schema["multipleOf"]).split(".")[1]) if "multipleOf" in schema else 17
    step = decimal.Decimal(10) ** -decimals
    inward = {"minimum": 0, "maximum": 0, "exclusiveMinimum": 1, "exclusiveMaximum": -1}
    ends = [decimal.Decimal(schema[key]) + direction * step for key, direction in inward.items() if key in schema]
    return max((f"{end:.{decimals}f}" for end in ends), key=len)


def schema_keywords(schema: dict[str, Any]) -> set[str]:
    """Every keyword of a schema and its subschemas (property names and patterns are not keywords)."""
    keywords = set(schema)
    for key, value in schema.items():
        if key in ("properties", "patternProperties"):
            subschemas = list(value.values())
        elif key == "anyOf":
            subschemas = value
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            subschemas = [value]
        else:
            subschemas = []
        for subschema in subschemas:
            keywords |= schema_keywords(subschema)
    return keywords


# output_schema


def test_literal_becomes_an_unbounded_enum():
    preference = properties(JudgePreference)["preference"]
    assert preference["enum"] == ["First", "Second"]
    assert "maxLength" not in preference


def test_only_output_fields_and_closed():
    schema = output_schema(JudgePreference, LengthBounds(800, 8))
    assert schema["type"] == "object"
    assert list(schema["properties"]) == ["preference"]
    assert schema["required"] == ["preference"]
    assert schema["additionalProperties"] is False


def test_strings_get_max_length():
    fields = properties(Bounded, chars=100)
    assert fields["note"] == {"type": "string", "maxLength": 100}
    assert fields["short"]["maxLength"] == 40  # a tighter bound of the field's own is kept
    assert properties(Bounded, chars=10)["short"]["maxLength"] == 10


def test_without_bounds_strings_and_lists_are_free():
    fields = output_schema(Bounded)["properties"]
    assert fields["note"] == {"type": "string"}
    assert fields["tags"] == {"type": "array", "items": {"type": "string"}}
    assert fields["short"]["maxLength"] == 40 and fields["few"]["maxItems"] == 3  # a signature's own bound stays
    assert fields["stars"]["enum"] == [1, 2, 3, 4, 5]  # numbers keep their ranges: llguidance needs them
    assert fields["count"] == {"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}


def test_without_bounds_a_map_has_any_number_of_entries_of_short_keys():
    labels = output_schema(Typed)["properties"]["labels"]
    assert "maxProperties" not in labels
    pattern, values = map_entries(labels)
    assert values == {"type": "string"}
    assert re.fullmatch(pattern, "k" * 40) and not re.fullmatch(pattern, "k" * 41)


def test_lists_get_max_items_and_bounded_items():
    fields = properties(Bounded, chars=50, items=4)
    assert fields["tags"]["maxItems"] == 4
    assert fields["tags"]["items"] == {"type": "string", "maxLength": 50}
    assert fields["few"]["maxItems"] == 3


def test_small_int_range_becomes_an_enum():
    stars = properties(Bounded)["stars"]
    assert stars["enum"] == [1, 2, 3, 4, 5]
    assert "minimum" not in stars and "maximum" not in stars


def test_wide_int_range_keeps_its_bounds():
    assert properties(Bounded)["year"] == {"type": "integer", "minimum": 1900, "maximum": 2100}


def test_unbounded_int_gets_the_safe_integer_range():
    safe_range = {"minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}
    assert properties(Bounded)["count"] == {"type": "integer", **safe_range}  # llguidance bounds no digits without it


def test_exclusive_int_bounds_become_an_enum():
    assert properties(Typed)["option"] == {"type": "integer", "enum": [1, 2, 3]}


def test_literal_ints_stay_an_enum():
    assert properties(GradeAnswer)["grade"]["enum"] == [1, 2, 3, 4, 5]
    assert properties(Typed)["level"] == {"type": "integer", "enum": [0, 1, 2]}


def test_literal_strings_stay_an_unbounded_enum():
    assert properties(Typed)["action"] == {"type": "string", "enum": ["ask", "answer"]}


def test_boolean_is_left_as_it_is():
    assert properties(Typed)["done"] == {"type": "boolean"}


def test_non_negative_float_gets_a_step():
    # a step bounds the decimals: llguidance lets a float without one write digits forever
    assert properties(Typed)["score"] == {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.0001}


def test_signed_float_keeps_its_bounds_without_a_step():
    # xllamacpp's llguidance (before 1.8.0) matches no negative number under multipleOf
    assert properties(Typed)["margin"] == {"type": "number", "exclusiveMinimum": -1, "exclusiveMaximum": 1}


def test_unbounded_float_gets_the_safe_integer_range():
    assert properties(Typed)["amount"] == {"type": "number", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("labels", {"type": "string", "maxLength": 100}),
        ("counts", {"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}),
        ("weights", {"type": "number", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}),
    ],
)
def test_dict_is_a_bounded_map_of_its_value_schema(field, values):
    schema = properties(Typed, chars=100, items=4)[field]
    assert schema["type"] == "object"
    assert map_entries(schema)[1] == values
    assert schema["additionalProperties"] is False  # no key outside the pattern
    assert schema["maxProperties"] == 4
    assert "properties" not in schema and "required" not in schema


@pytest.mark.parametrize("annotation", [Any, list, list[Any], dict, dict[str, Any]])
def test_an_output_of_any_type_is_refused(annotation):
    signature = dspy.Signature("question -> answer").with_updated_fields("answer", type_=annotation)
    with pytest.raises(ConfigError, match="type Any"):
        output_schema(signature, LengthBounds(800, 8))


def test_dict_keeps_a_tighter_size_of_its_own():
    assert properties(Typed, items=4)["few_counts"]["maxProperties"] == 2


def test_dict_keys_are_short_and_need_no_escapes():
    pattern, _ = map_entries(properties(Typed)["labels"])
    assert re.fullmatch(pattern, "k" * 40) and re.fullmatch(pattern, "语言") and re.fullmatch(pattern, "follow-ups")
    for key in ["", "k" * 41, 'say "hi"', "back\\slash", "new\nline", "\x7f"]:
        assert not re.fullmatch(pattern, key)


def test_dict_keys_are_no_longer_than_strings():
    pattern, _ = map_entries(properties(Typed, chars=10)["labels"])
    assert re.fullmatch(pattern, "k" * 10) and not re.fullmatch(pattern, "k" * 11)


def test_list_of_models_is_closed_with_every_field_required():
    checklist = properties(Typed, chars=60, items=3)["checklist"]
    assert checklist["maxItems"] == 3
    item = checklist["items"]
    assert item["required"] == ["criterion", "met", "note"]  # an optional field is written, as null when unknown
    assert item["additionalProperties"] is False
    assert item["properties"]["met"] == {"type": "boolean"}
    assert {"type": "string", "maxLength": 60} in item["properties"]["note"]["anyOf"]
    assert {"type": "null"} in item["properties"]["note"]["anyOf"]


def test_optional_model_is_a_closed_object_or_null():
    [menu, null] = properties(Typed)["menu"]["anyOf"]
    assert null == {"type": "null"}
    assert menu["required"] == ["title", "main", "spicy"]
    assert menu["properties"]["main"]["additionalProperties"] is False


def test_optional_string_is_bounded_in_each_option():
    options = properties(Bounded, chars=30)["maybe"]["anyOf"]
    assert {"type": "string", "maxLength": 30} in options
    assert {"type": "null"} in options


def test_nested_model_is_inlined_and_closed():
    schema = output_schema(PlanMenu, LengthBounds(200, 5))
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    menu = schema["properties"]["menu"]
    assert menu["required"] == ["title", "main", "spicy"]
    assert menu["additionalProperties"] is False
    dish = menu["properties"]["main"]
    assert dish["required"] == ["name", "ingredients"]
    assert dish["additionalProperties"] is False
    assert dish["properties"]["ingredients"]["maxItems"] == 5
    assert dish["properties"]["ingredients"]["items"]["maxLength"] == 200


# Bounds of one field, keyed Owner.field


class Aspect(pydantic.BaseModel):
    title: str
    tags: list[str]


class PlanAspects(dspy.Signature):
    """Plan the aspects of an answer."""

    question: str = dspy.InputField()
    summary: str = dspy.OutputField()
    aspects: list[Aspect] = dspy.OutputField()


class Summarize(dspy.Signature):
    """Summarize the text."""

    text: str = dspy.InputField()
    summary: str = dspy.OutputField()


FIELD_BOUNDS = LengthBounds(
    500, 6, field_chars={"PlanAspects.summary": 90, "PlanAspects.aspects": 70, "Aspect.title": 30},
    field_items={"PlanAspects.aspects": 2},
)


def test_a_field_bound_applies_to_that_field_only():
    fields = output_schema(PlanAspects, FIELD_BOUNDS)["properties"]
    assert fields["summary"] == {"type": "string", "maxLength": 90}
    assert output_schema(Summarize, FIELD_BOUNDS)["properties"]["summary"]["maxLength"] == 500  # another signature's


def test_a_field_bound_covers_what_the_field_holds_down_to_a_nested_field_of_its_own():
    aspects = output_schema(PlanAspects, FIELD_BOUNDS)["properties"]["aspects"]
    assert aspects["maxItems"] == 2
    item = aspects["items"]["properties"]
    assert item["title"] == {"type": "string", "maxLength": 30}  # Aspect.title, the nested model's own key
    assert item["tags"] == {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 70}}


@pytest.mark.parametrize(
    "copy",
    [
        lambda signature: signature.with_instructions("Plan what this user wants to read."),
        lambda signature: dspy.ChainOfThought(signature).predict.signature,
        lambda signature: signature.load_state(dspy.Predict(signature).dump_state()["signature"]),
    ],
    ids=["instructions", "chain of thought", "loaded state"],
)
def test_a_field_bound_follows_the_copies_dspy_makes_of_a_signature(copy):
    signature = copy(PlanAspects)
    assert signature.__name__ != "PlanAspects"
    assert declared_names(signature) == {"PlanAspects"}
    fields = output_schema(signature, FIELD_BOUNDS)["properties"]
    assert fields["summary"]["maxLength"] == 90
    assert fields["aspects"]["maxItems"] == 2
    assert fields.get("reasoning", {"maxLength": 500})["maxLength"] == 500


# max_chars


SIGNATURES = [JudgePreference, Bounded, PlanMenu, ListTopics, GradeAnswer, Typed]


@pytest.mark.parametrize("signature", SIGNATURES)
def test_max_chars_bounds_the_longest_compact_reply(signature):
    schema = output_schema(signature, LengthBounds(120, 4))
    longest = longest_text(schema)
    json.loads(longest)
    assert len(longest) <= max_chars(schema)


@pytest.mark.parametrize("field", list(TYPED_REPLY))
def test_max_chars_bounds_each_typed_field(field):
    schema = properties(Typed, chars=120, items=4)[field]
    assert len(longest_text(schema)) <= max_chars(schema)
    assert len(json.dumps(TYPED_REPLY[field], ensure_ascii=False, separators=(",", ":"))) <= max_chars(schema)


def test_max_chars_of_literals_and_keywords_is_exact():
    fields = properties(Typed)
    assert max_chars(fields["done"]) == len("false")
    assert max_chars(fields["action"]) == len('"answer"')
    assert max_chars(fields["level"]) == 1
    assert max_chars({"type": "null"}) == len("null")


def test_max_chars_of_a_stepped_float_counts_its_decimals():
    assert max_chars(properties(Typed)["score"]) == len("0.9999")


def test_max_chars_of_a_map_counts_every_entry():
    labels = properties(Typed, chars=10, items=3)["labels"]
    entry = len('"kkkkkkkkkk": "xxxxxxxxxx", ')
    assert max_chars(labels) == 2 + 3 * entry


def test_max_chars_grows_with_the_bounds():
    def longest(signature, chars, items):
        return max_chars(output_schema(signature, LengthBounds(chars, items)))

    assert longest(ListTopics, 100, 8) > longest(ListTopics, 100, 4)
    assert longest(ListTopics, 200, 4) > longest(ListTopics, 100, 4)
    assert longest(Typed, 100, 8) > longest(Typed, 100, 4)


@pytest.mark.parametrize(("signature", "field"), [(Bounded, "note"), (Bounded, "tags"), (Typed, "labels")])
def test_max_chars_of_an_unbounded_string_list_or_map_is_infinite(signature, field):
    assert max_chars(output_schema(signature)["properties"][field]) == math.inf
    assert max_chars(output_schema(signature)) == math.inf


def test_max_chars_of_an_unbounded_schema_of_literals_is_finite():
    assert len('{"grade":1}') <= max_chars(output_schema(GradeAnswer)) < 20


# The grammar converter of the embedded server


@pytest.mark.parametrize("signature", SIGNATURES)
def test_schema_converts_to_a_grammar_unchanged(signature):
    xllamacpp = pytest.importorskip("xllamacpp")
    schema = output_schema(signature, LengthBounds(120, 4))
    grammar = xllamacpp.json_schema_to_grammar(json.dumps(schema))
    # this build hands the schema to llguidance as it is, which compiles it when a request arrives
    header, embedded = grammar.split("%json ", 1)
    assert header.startswith("%llguidance")
    assert json.loads(embedded) == schema


@pytest.mark.parametrize("signature", SIGNATURES)
def test_schema_uses_only_keywords_llguidance_implements(signature):
    assert schema_keywords(output_schema(signature, LengthBounds(120, 4))) <= LLGUIDANCE_KEYWORDS


# SchemaAdapter.parse: a reply of each type comes back as that type


@pytest.mark.parametrize("field", list(TYPED_REPLY))
def test_reply_parses_into_the_field_type(field):
    parsed = SchemaAdapter().parse(Typed, json.dumps(TYPED_REPLY))
    annotation = Typed.output_fields[field].annotation
    assert pydantic.TypeAdapter(annotation).validate_python(parsed[field], strict=True) == parsed[field]
    assert pydantic.TypeAdapter(annotation).dump_python(parsed[field]) == TYPED_REPLY[field]


def test_parsed_types_are_the_declared_ones():
    parsed = SchemaAdapter().parse(Typed, json.dumps({**TYPED_REPLY, "weights": {"a": 1}, "menu": None}))
    assert type(parsed["weights"]["a"]) is float  # an integral weight is still a float
    assert all(type(count) is int for count in parsed["counts"].values())
    assert all(isinstance(item, CheckedCriterion) for item in parsed["checklist"])
    assert parsed["checklist"][0].note is None and parsed["checklist"][1].note == "gives miles"
    assert parsed["menu"] is None
    assert type(parsed["score"]) is float and type(parsed["done"]) is bool


def test_predict_with_the_schema_adapter_returns_typed_outputs():
    lm = DummyLM([TYPED_REPLY], adapter=dspy.JSONAdapter())
    with dspy.context(lm=lm, adapter=SchemaAdapter(bounds=LengthBounds(120, 4))):
        prediction = dspy.Predict(Typed)(question="What does this user want?")
    assert isinstance(prediction.menu, Menu) and isinstance(prediction.menu.main, Dish)
    assert prediction.weights == TYPED_REPLY["weights"]
    sent = lm.history[-1]["kwargs"]
    assert sent["response_format"]["json_schema"]["schema"] == output_schema(Typed, LengthBounds(120, 4))


# SchemaAdapter._prepare_response_format

SMALL = LengthBounds(800, 8)


def prepared(dialect: str, bounds: LengthBounds | None = SMALL, **lm_kwargs: Any) -> dict[str, Any]:
    lm = dspy.LM("hosted_vllm/SmolLM2-135M-Instruct", api_base="http://127.0.0.1:1/v1", max_tokens=16)
    SchemaAdapter(dialect=dialect, bounds=bounds)._prepare_response_format(lm, lm_kwargs, Bounded)
    return lm_kwargs


def test_json_schema_wire_form():
    sent = prepared("json_schema")
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "outputs", "schema": output_schema(Bounded, LengthBounds(800, 8)), "strict": True},
    }


def test_no_constraint_sends_nothing():
    assert prepared("none") == {}
    assert prepared("none", max_tokens=8) == {"max_tokens": 8}


def test_max_tokens_is_raised_to_cover_the_schema():
    needed = math.ceil(max_chars(output_schema(Bounded, LengthBounds(800, 8))) / CHARS_PER_TOKEN)
    assert prepared("json_schema")["max_tokens"] > needed  # the LM's own 16 would cut the reply off
    assert prepared("json_schema", max_tokens=100)["max_tokens"] > needed
    assert prepared("json_schema", max_tokens=100_000)["max_tokens"] == 100_000  # a larger budget is never lowered


def test_an_unbounded_schema_leaves_max_tokens_as_it_is():
    assert "max_tokens" not in prepared("json_schema", None)  # the LM's own max_tokens bounds the reply
    assert prepared("json_schema", None, max_tokens=100)["max_tokens"] == 100
    assert prepared("json_schema", None)["response_format"]["json_schema"]["schema"] == output_schema(Bounded)


def test_llguidance_asks_for_compact_json_in_the_schema():
    sent = prepared("llguidance")
    assert sent["response_format"]["json_schema"]["schema"] == {**output_schema(Bounded, SMALL),
                                                                 "x-guidance": COMPACT_JSON}
    assert COMPACT_JSON["whitespace_flexible"] is False
    assert sent["max_tokens"] == prepared("json_schema")["max_tokens"]  # the same bounds, the same budget


def test_llguidance_schema_goes_in_the_grammar_field():
    body = {"model": "m", "response_format": prepared("llguidance")["response_format"], "extra_body": {"top_k": 5}}
    constraint_in_server_field(body)
    header, embedded = body["extra_body"]["grammar"].split("%json ", 1)
    assert header == "%llguidance {}\nstart: "
    assert json.loads(embedded) == {**output_schema(Bounded, SMALL), "x-guidance": COMPACT_JSON}
    assert body == {"model": "m", "extra_body": {"top_k": 5, "grammar": body["extra_body"]["grammar"]}}


def test_vllm_schema_goes_in_structured_outputs_with_the_compact_layout_for_guidance():
    sent = prepared("vllm")
    assert sent["max_tokens"] == prepared("json_schema")["max_tokens"]
    body = {"model": "m", "response_format": sent["response_format"], "extra_body": {"top_k": 5}}
    constraint_in_server_field(body)
    assert body == {"model": "m", "extra_body": {"top_k": 5, "structured_outputs": {
        "json": {**output_schema(Bounded, SMALL), "x-guidance": COMPACT_JSON}}}}
    assert "x-vllm" in sent["response_format"]["json_schema"]["schema"]  # the request DSPy caches is left as it was


def test_a_json_schema_stays_in_response_format():
    body = {"model": "m", "response_format": prepared("json_schema")["response_format"]}
    constraint_in_server_field(body)
    assert body == {"model": "m", "response_format": prepared("json_schema")["response_format"]}


@pytest.mark.parametrize("signature", [PlanMenu, ListTopics, GradeAnswer, JudgePreference])
def test_the_system_message_is_dspys_own_built_once_per_signature_shape(signature, monkeypatch):
    built: list[type[dspy.Signature]] = []
    dspys = dspy.JSONAdapter.format_system_message

    def counting(self: dspy.JSONAdapter, asked: type[dspy.Signature]) -> str:
        built.append(asked)
        return dspys(self, asked)

    monkeypatch.setattr(dspy.JSONAdapter, "format_system_message", counting)
    adapter = SchemaAdapter()
    expected = dspys(dspy.JSONAdapter(), signature)
    assert adapter.format_system_message(signature) == adapter.format_system_message(signature) == expected
    assert built == [signature]
    assert adapter.format_system_message(dspy.ChainOfThought(signature).predict.signature) != expected
    assert adapter.format_system_message(signature.with_instructions(signature.instructions)) == expected
    rewritten = signature.with_instructions("Answer as the user would.")
    assert "Answer as the user would." in adapter.format_system_message(rewritten)
    described = signature.with_updated_fields(next(iter(signature.output_fields)), desc="a new description")
    assert "a new description" in adapter.format_system_message(described)
    assert len(built) == 4  # the copy with the same instructions was not built again


def test_unknown_dialect():
    with pytest.raises(ConfigError, match="grammar"):
        SchemaAdapter(dialect="grammar")


# Real calls through the embedded llama.cpp server

CONVERSATION = "[user]: What is the capital of France? Answer in one word."


def run_on(model, module: dspy.Module, adapter: SchemaAdapter | None = None, **inputs: Any) -> dspy.Prediction:
    with dspy.context(lm=build_lm(model), adapter=adapter or build_adapter(model, SmallModelProfile())):
        return module(**inputs)


def small_adapter(model) -> SchemaAdapter:
    """Tighter bounds than the profile's keep a 135M model's replies (and the tests) short."""
    return SchemaAdapter(dialect=model.dialect, bounds=LengthBounds(120, 3))


@pytest.mark.server
def test_judge_returns_first_or_second(embedded_model):
    prediction = run_on(
        embedded_model,
        dspy.ChainOfThought(JudgePreference),
        conversation=CONVERSATION,
        first_completion="Paris.",
        second_completion="The capital of France is Berlin.",
    )
    assert prediction.preference in ("First", "Second")
    assert isinstance(prediction.reasoning, str)


@pytest.mark.server
def test_list_output_is_a_list_of_strings(embedded_model):
    prediction = run_on(
        embedded_model,
        dspy.Predict(ListTopics),
        small_adapter(embedded_model),
        text="I baked sourdough bread and went hiking.",
    )
    assert isinstance(prediction.topics, list)
    assert all(isinstance(topic, str) for topic in prediction.topics)
    assert len(prediction.topics) <= 3  # the schema's maxItems was enforced


@pytest.mark.server
def test_grade_is_an_int_in_range(embedded_model):
    prediction = run_on(embedded_model, dspy.Predict(GradeAnswer), question="What is 2 + 2?", answer="4")
    assert type(prediction.grade) is int
    assert prediction.grade in (1, 2, 3, 4, 5)


@pytest.mark.server
def test_pydantic_output_is_parsed_into_the_model(embedded_model):
    prediction = run_on(
        embedded_model, dspy.Predict(PlanMenu), small_adapter(embedded_model), occasion="a birthday dinner"
    )
    assert isinstance(prediction.menu, Menu)
    assert isinstance(prediction.menu.main, Dish)
    assert isinstance(prediction.menu.spicy, bool)
    assert all(isinstance(ingredient, str) for ingredient in prediction.menu.main.ingredients)
    assert len(prediction.menu.title) <= 120  # the schema's maxLength was enforced


@pytest.mark.server
def test_llguidance_dialect_gets_compact_json_that_parses(embedded_model):
    lm = build_lm(embedded_model)
    adapter = SchemaAdapter(dialect="llguidance", bounds=LengthBounds(120, 3))
    with dspy.context(lm=lm, adapter=adapter):
        prediction = dspy.ChainOfThought(PlanMenu)(occasion="a birthday dinner")
    assert isinstance(prediction.menu, Menu) and isinstance(prediction.reasoning, str)
    [reply] = lm.history[-1]["outputs"]
    assert reply.startswith('{"reasoning": "')
    assert not has_free_whitespace(reply)  # one space after each : and ,


@pytest.mark.parametrize(
    ("reply", "free"),
    [('{"a": "x  y\\n", "b": [1, 2]}', False), ('{"a":1,"b":[1,2]}', False), ('{"a": "say \\"hi\\" "}', False),
     ('{\n  "a": 1\n}', True), (' {"a": 1}', True), ('{"a":  1}', True), ('{"a": 1 }', True)],
    ids=["spaced", "bare", "escaped quotes", "pretty", "leading", "two spaces", "before a brace"],
)
def test_free_whitespace_is_whitespace_outside_strings_beyond_one_space_after_a_separator(reply, free):
    assert has_free_whitespace(reply) is free


def test_a_signatures_schema_is_built_once_per_shape_and_each_request_gets_its_own(monkeypatch):
    """Every ChainOfThought copies its signature: the schema is keyed by what it is made of, not the class."""
    built = []
    monkeypatch.setattr(adapter_module, "output_schema", lambda signature, bounds=None: built.append(1) or
                        output_schema(signature, bounds))
    adapter = SchemaAdapter()
    formats = []
    for _ in range(3):
        kwargs: dict = {}
        adapter._prepare_response_format(None, kwargs, dspy.ChainOfThought("question -> answer: int").predict.signature)
        formats.append(kwargs["response_format"])
    assert len(built) == 1
    assert formats[0] == formats[2] and formats[0] is not formats[2]
    kwargs = {}
    adapter._prepare_response_format(None, kwargs, dspy.Predict("question -> answer: str").signature)
    assert len(built) == 2
