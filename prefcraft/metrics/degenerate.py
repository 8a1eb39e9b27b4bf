"""Degenerate outputs: text that parsed but says nothing, which no metric should mistake for an answer.

A small model under constrained decoding always returns JSON of the right shape, but the string inside can be empty,
a template placeholder copied from the prompt (`{response}`, `{{answer}}`, `<answer>`, `[preference]`) or the output
field's own name ("preference"). Graders and matchers have scored such strings well, so they are counted apart.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

import dspy

NAME = r"[a-z_][\w.-]*(?: [\w.-]+){0,2}"  # a template slot's name: at most three words ("your answer here")
PLACEHOLDER = re.compile(rf"\{{+\s*(?:{NAME})?\s*\}}+|<\s*{NAME}\s*>|\[\s*{NAME}\s*\]", re.I)
SEPARATORS = re.compile(r"[\s_-]+")
EDGE = string.whitespace + "\"'`.:;,!?*"  # quotes and punctuation around a value do not make it an answer


def is_degenerate(value: str | None, field_name: str) -> bool:
    """Whether `value`, written for the output field `field_name`, is empty, a template placeholder or the field's name
    (case, underscores, hyphens and spaces aside, and ignoring quotes or punctuation around it)."""
    core = (value or "").strip(EDGE)
    return not core or PLACEHOLDER.fullmatch(core) is not None or _words(core) == _words(field_name)


def text_output_fields(signature: type[dspy.Signature]) -> list[str]:
    """The names of `signature`'s output fields that hold free text (typed outputs cannot be degenerate this way)."""
    return [name for name, field in signature.output_fields.items() if field.annotation is str]


def count_degenerate(predictions: Iterable[dspy.Prediction | None], fields: Iterable[str]) -> int:
    """How many of the `fields` values over `predictions` are degenerate. A missing prediction (a failed call) is a
    failure, counted elsewhere; a prediction without one of the fields is skipped for that field."""
    names = list(fields)
    return sum(
        is_degenerate(prediction[name], name)
        for prediction in predictions
        if prediction is not None
        for name in names
        if name in prediction and (prediction[name] is None or isinstance(prediction[name], str))
    )


def _words(text: str) -> str:
    return SEPARATORS.sub(" ", text).strip().lower()
