"""Why one item's call failed, in one line: a prompt over the context window told apart from an unparseable reply and
from any other error, however the server or litellm phrased it; which failures end one item only."""

import dspy
import litellm
import pytest
from dspy.utils.exceptions import AdapterParseError, LMAuthError, LMTimeoutError, LMTransportError

from prefcraft.engine.item_failures import (
    CONTEXT_OVERFLOW,
    UNPARSEABLE,
    failure_reason,
    is_context_overflow,
    is_item_failure,
    reason_kind,
)
from prefcraft.errors import DataError, ServerUnreachableError

VLLM_OVERFLOW = ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (31808 in "
                 "the messages, 8192 in the completion).")


def context_window_exceeded():
    return litellm.ContextWindowExceededError(message=VLLM_OVERFLOW, model="m", llm_provider="hosted_vllm")


def bad_request(message=VLLM_OVERFLOW):
    return lambda: litellm.BadRequestError(message=message, model="m", llm_provider="hosted_vllm")


@pytest.mark.parametrize(("error", "reason"), [
    (litellm.ContextWindowExceededError(message="too long", model="m", llm_provider="openai"), CONTEXT_OVERFLOW),
    (bad_request()(), CONTEXT_OVERFLOW),
    (dspy.ContextWindowExceededError(model="m"), CONTEXT_OVERFLOW),
    (bad_request("Error code: 400 - {'code': 'context_length_exceeded'}")(), CONTEXT_OVERFLOW),
    (bad_request("temperature must be at most 2")(), "BadRequestError: litellm.BadRequestError: temperature must"),
    (RuntimeError("maximum context length"), "RuntimeError: maximum context length"),  # not a rejected request
])
def test_failure_reasons_tell_a_context_overflow_from_other_errors(error, reason):
    assert failure_reason(error).startswith(reason)


def test_an_overflow_wrapped_by_dspy_is_found_through_its_cause():
    try:
        try:
            raise context_window_exceeded()
        except litellm.ContextWindowExceededError as cause:
            raise RuntimeError("the LM call failed") from cause
    except RuntimeError as error:
        assert is_context_overflow(error)


def test_an_unparseable_reply_says_so():
    error = AdapterParseError("JSONAdapter", dspy.Signature("a -> b"), "{\"b\": \"cut sho")
    assert reason_kind(failure_reason(error)) == UNPARSEABLE


@pytest.mark.parametrize(("error", "one_item"), [
    (context_window_exceeded(), True),
    (bad_request("Internal error in the sampler")(), True),
    (DataError("rows.jsonl", 3, "profile", "is empty"), True),
    (ServerUnreachableError("http://127.0.0.1:9/v1", "connection refused"), False),
    (RuntimeError("a bug"), False),
    (LMTimeoutError("the call timed out"), False),  # the server is slower than the timeout: the command ends
    (LMTransportError("connection reset"), False),
    (LMAuthError("401"), False),  # every later call would be refused alike
])
def test_only_a_failed_call_or_refused_data_ends_one_item_alone(error, one_item):
    assert is_item_failure(error) is one_item


def test_a_prefcraft_error_keeps_its_own_words():
    assert failure_reason(DataError("rows.jsonl", 3, "profile", "is empty")) == (
        "rows.jsonl, row 3, field 'profile': is empty")
