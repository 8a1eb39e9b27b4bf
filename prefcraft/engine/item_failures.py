"""One item's failed model call (a user's fit, an instance, a scenario, a question, a description): whether it ends
that item alone, and why it failed, in one line the result files and reports carry.

At the papers' scale a run goes on past a failed item, as each reference code does; only a server that can no longer
be reached ends it (every item after would fail alike).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError, DSPyError, LMInvalidRequestError
from openai import OpenAIError  # litellm's errors (ContextWindowExceededError, BadRequestError, ...) derive from it

from prefcraft.engine.lm import EndpointFaults, server_cut_off
from prefcraft.engine.routing import OVERFLOW_MESSAGE
from prefcraft.errors import PrefcraftError, ServerError

CONTEXT_OVERFLOW = "context_window_exceeded"
UNPARSEABLE = "adapter_parse_error"
NO_REASON = "no prediction (the call's error was not seen)"
REASON_CHARS = 200


def is_item_failure(error: BaseException) -> bool:
    """Whether `error` ends one item's work only: a model call the server refused or answered unparseably, or the item's
    data refused. Never a call that timed out, found no server or was refused its credentials or model
    (`lm.server_cut_off`), nor any call once an endpoint failed so (`EndpointFaults`: the command ends with that error,
    and nothing is written as if the items had failed on their own)."""
    return (isinstance(error, PrefcraftError | DSPyError | OpenAIError) and not isinstance(error, ServerError)
            and not server_cut_off(error) and EndpointFaults.error() is None)


def failure_kind(error: BaseException) -> str:
    """CONTEXT_OVERFLOW, UNPARSEABLE (a reply cut at `max_tokens` is one too), or the error's own code or type."""
    if is_context_overflow(error):
        return CONTEXT_OVERFLOW
    if any(isinstance(cause, AdapterParseError) for cause in _chain(error)):
        return UNPARSEABLE
    return getattr(error, "code", None) or type(error).__name__


def failure_reason(error: BaseException) -> str:
    """`kind: first line of the message`, short enough for a result row; a PrefcraftError's own message as it is."""
    if isinstance(error, PrefcraftError):
        return str(error)[:REASON_CHARS]
    first_line = (str(error).strip().splitlines() or [""])[0]
    return f"{failure_kind(error)}: {first_line}"[:REASON_CHARS]


def reason_kind(reason: str) -> str:
    """The kind a `failure_reason` starts with (CONTEXT_OVERFLOW, UNPARSEABLE, an error's code or type)."""
    return reason.partition(":")[0]


def is_context_overflow(error: BaseException) -> bool:
    """Whether `error`, or an error that led to it, is a prompt over the model's context window: DSPy's or litellm's
    ContextWindowExceededError, or a rejected request whose message says so (a server's HTTP 400 litellm left
    unmapped)."""
    litellm = sys.modules.get("litellm")  # not imported: no litellm error was raised
    overflow: tuple[type, ...] = (dspy.ContextWindowExceededError,)
    bad_request: tuple[type, ...] = (LMInvalidRequestError,)
    if litellm is not None:
        overflow += (litellm.ContextWindowExceededError,)
        bad_request += (litellm.BadRequestError,)
    return any(isinstance(cause, overflow)
               or (isinstance(cause, bad_request) and OVERFLOW_MESSAGE.search(str(cause)) is not None)
               for cause in _chain(error))


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


class FailureLog(dspy.Module):
    """`program`, recording why each call that raised failed (`failure_reason`) before raising it again, for a runner
    such as `prefcraft.engine.evaluation.evaluate_program` that keeps only None for a failed call."""

    def __init__(self, program: dspy.Module):
        super().__init__()
        self.program = program
        self.reasons: dict[str, str] = {}

    def forward(self, **inputs: Any) -> dspy.Prediction:
        try:
            return self.program(**inputs)
        except Exception as error:
            self.reasons[_key(inputs)] = failure_reason(error)
            raise

    def reason(self, example: dspy.Example) -> str:
        """Why `example`'s call failed (its inputs are the key: the same inputs fail alike)."""
        return self.reasons.get(_key(example.inputs().toDict()), NO_REASON)


def _key(inputs: dict[str, Any]) -> str:
    return json.dumps(inputs, sort_keys=True, default=repr)
