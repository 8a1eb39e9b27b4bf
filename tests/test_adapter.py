import json
import math
from typing import Annotated, Any, Literal

import dspy
import pydantic
import pytest

from prefcraft.adapter import CHARS_PER_TOKEN, SchemaAdapter, max_chars, output_schema
from prefcraft.errors import ConfigError
from prefcraft.lm import build_adapter, build_lm
from signatures.judge import JudgePreference


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


def properties(signature: type[dspy.Signature], **bounds: int) -> dict[str, Any]:
    return output_schema(signature, bounds.get("chars", 800), bounds.get("items", 8))["properties"]


def largest_value(schema: dict[str, Any]) -> Any:
    """The longest JSON value a bounded schema allows."""
    if "enum" in schema:
        return max(schema["enum"], key=lambda value: len(json.dumps(value)))
    if "anyOf" in schema:
        return max((largest_value(option) for option in schema["anyOf"]), key=lambda value: len(json.dumps(value)))
    kind = schema.get("type")
    if kind == "string":
        return "x" * schema["maxLength"]
    if kind == "array":
        return [largest_value(schema["items"])] * schema["maxItems"]
    if kind == "object":
        return {name: largest_value(value) for name, value in schema["properties"].items()}
    if kind == "boolean":
        return False
    return -(10**20)


# output_schema


def test_literal_becomes_an_unbounded_enum():
    preference = properties(JudgePreference)["preference"]
    assert preference["enum"] == ["First", "Second"]
    assert "maxLength" not in preference


def test_only_output_fields_and_closed():
    schema = output_schema(JudgePreference, 800, 8)
    assert schema["type"] == "object"
    assert list(schema["properties"]) == ["preference"]
    assert schema["required"] == ["preference"]
    assert schema["additionalProperties"] is False


def test_strings_get_max_length():
    fields = properties(Bounded, chars=100)
    assert fields["note"] == {"type": "string", "maxLength": 100}
    assert fields["short"]["maxLength"] == 40  # a tighter bound of the field's own is kept
    assert properties(Bounded, chars=10)["short"]["maxLength"] == 10


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
    assert properties(Bounded)["count"] == {"type": "integer"}


def test_literal_ints_stay_an_enum():
    assert properties(GradeAnswer)["grade"]["enum"] == [1, 2, 3, 4, 5]


def test_optional_string_is_bounded_in_each_option():
    options = properties(Bounded, chars=30)["maybe"]["anyOf"]
    assert {"type": "string", "maxLength": 30} in options
    assert {"type": "null"} in options


def test_nested_model_is_inlined_and_closed():
    schema = output_schema(PlanMenu, 200, 5)
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


# max_chars


@pytest.mark.parametrize("signature", [JudgePreference, Bounded, PlanMenu, ListTopics, GradeAnswer])
def test_max_chars_bounds_the_longest_compact_reply(signature):
    schema = output_schema(signature, 120, 4)
    longest = json.dumps(largest_value(schema), separators=(",", ":"))
    assert len(longest) <= max_chars(schema)


def test_max_chars_grows_with_the_bounds():
    assert max_chars(output_schema(ListTopics, 100, 8)) > max_chars(output_schema(ListTopics, 100, 4))
    assert max_chars(output_schema(ListTopics, 200, 4)) > max_chars(output_schema(ListTopics, 100, 4))


# SchemaAdapter._prepare_response_format


def prepared(dialect: str, signature: type[dspy.Signature] = Bounded, **lm_kwargs: Any) -> dict[str, Any]:
    lm = dspy.LM("hosted_vllm/SmolLM2-135M-Instruct", api_base="http://127.0.0.1:1/v1", max_tokens=16)
    SchemaAdapter(dialect=dialect)._prepare_response_format(lm, lm_kwargs, signature)
    return lm_kwargs


def test_llamacpp_wire_form():
    sent = prepared("llamacpp")
    assert sent["extra_body"]["response_format"] == {"type": "json_object", "schema": output_schema(Bounded, 800, 8)}
    assert "response_format" not in sent  # DSPy's native engine would rebuild a top-level one


def test_json_schema_wire_form():
    sent = prepared("json_schema")
    assert sent["extra_body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "outputs", "schema": output_schema(Bounded, 800, 8), "strict": True},
    }
    assert "response_format" not in sent


def test_no_constraint_sends_nothing():
    assert prepared("none") == {}
    assert prepared("none", max_tokens=8) == {"max_tokens": 8}


def test_other_extra_body_keys_are_kept():
    sent = prepared("llamacpp", extra_body={"top_k": 5})
    assert sent["extra_body"]["top_k"] == 5
    assert "response_format" in sent["extra_body"]


def test_max_tokens_is_raised_to_cover_the_schema():
    needed = math.ceil(max_chars(output_schema(Bounded, 800, 8)) / CHARS_PER_TOKEN)
    assert prepared("llamacpp")["max_tokens"] > needed  # the LM's own 16 would cut the reply off
    assert prepared("json_schema", max_tokens=100)["max_tokens"] > needed
    assert prepared("llamacpp", max_tokens=100_000)["max_tokens"] == 100_000  # a larger budget is never lowered


def test_unknown_dialect():
    with pytest.raises(ConfigError, match="grammar"):
        SchemaAdapter(dialect="grammar")


# Real calls through the embedded llama.cpp server

CONVERSATION = "[user]: What is the capital of France? Answer in one word."


def run_on(model, module: dspy.Module, adapter: SchemaAdapter | None = None, **inputs: Any) -> dspy.Prediction:
    with dspy.context(lm=build_lm(model), adapter=adapter or build_adapter(model)):
        return module(**inputs)


def small_adapter(model) -> SchemaAdapter:
    """Tighter bounds than the defaults keep a 135M model's replies (and the tests) short."""
    return SchemaAdapter(dialect=model.structured_output, max_string_chars=120, max_list_items=3)


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
