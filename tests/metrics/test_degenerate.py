"""Degenerate outputs: empty text, template placeholders and the field's own name, and their count over predictions."""

import dspy
import pytest

from prefcraft.metrics.degenerate import count_degenerate, is_degenerate, text_output_fields


@pytest.mark.parametrize("value", ["", "   ", "\n\t", None, '""', "...", "``"])
def test_empty_or_only_quotes_and_punctuation_is_degenerate(value):
    assert is_degenerate(value, "preference")


@pytest.mark.parametrize(
    "value",
    ["{response}", "{{answer}}", "{ answer }", "{}", "<answer>", "[preference]", "<your answer here>", '"{response}"',
     "{{ preference }}.", "[Final_Answer]", "<user-preference>"],
)
def test_a_template_placeholder_is_degenerate(value):
    assert is_degenerate(value, "preference")


@pytest.mark.parametrize("value", ["preference", "Preference", "PREFERENCE:", '"preference."', " preference\n"])
def test_the_fields_own_name_is_degenerate(value):
    assert is_degenerate(value, "preference")


@pytest.mark.parametrize("value", ["current request", "Current_Request", "current-request", "CURRENT  REQUEST"])
def test_the_field_name_matches_across_case_underscores_hyphens_and_spaces(value):
    assert is_degenerate(value, "current_request")


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("Explain rules through a sample first turn.", "preference"),
        ("The preference", "preference"),  # more than the name
        ("response", "preference"),  # another field's name is a (poor) answer, not this field's echo
        ("{response} is what I would write", "preference"),  # a placeholder inside text
        ("[brief and friendly tone]", "preference"),  # four words in brackets read as content, not a slot
        ("[1]", "relevant"),  # a slot name starts with a letter
        ("pre ference", "preference"),  # spaces split words; the name is not matched inside other words
        ("current", "current_request"),
    ],
)
def test_real_text_is_not_degenerate(value, field):
    assert not is_degenerate(value, field)


class Mixed(dspy.Signature):
    """A signature with text and typed outputs."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()
    rating: int = dspy.OutputField()
    tags: list[str] = dspy.OutputField()


def test_only_free_text_output_fields_are_checked():
    assert text_output_fields(Mixed) == ["answer"]


def test_count_over_predictions_skips_failed_calls_and_absent_fields():
    predictions = [
        dspy.Prediction(answer="{answer}", rating=3),
        dspy.Prediction(answer="Paris", rating=0),
        None,  # a failed call: counted as a failure elsewhere
        dspy.Prediction(rating=5),  # no answer field at all
        dspy.Prediction(answer="  ", rating=1),
        dspy.Prediction(answer=None),
    ]
    assert count_degenerate(predictions, text_output_fields(Mixed)) == 3
    assert count_degenerate(predictions, ["answer", "rating"]) == 3  # a non-text value is never degenerate text
    assert count_degenerate([], ["answer"]) == 0


def test_each_field_of_a_prediction_counts_on_its_own():
    prediction = dspy.Prediction(preference="preference", response="{response}", note="fine")
    assert count_degenerate([prediction], ["preference", "response", "note"]) == 2
