"""LM calls and tokens spent inside a block, from DSPy's own usage tracker (cache hits cost nothing), and the HTTP
requests sent for them, counted by prefcraft's engine (`lm.CountingEngine`): DSPy's tracker sees one entry per answered
call, not the attempts that failed or were sent again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import dspy
from dspy.utils.usage_tracker import UsageTracker

Tally = Literal["requests", "retries", "resubmissions", "cut_short", "unparsed"]


@dataclass
class LMUsage:
    """`calls`: calls a server answered (cache hits excluded). Every HTTP request sent is counted once, as one of
    `requests` (a call's first attempt, failed or not) or `retries` (the same request again, after a broken
    connection). `resubmissions`: calls made again while the same request still waited for its answer (DSPy resubmits
    slow calls), answered by that request and never sent. `cut_short`: answers the server ended at `max_tokens`
    (finish reason `length`): their text stops mid-way, and a structured reply parses only if JSON repair can close
    it. `unparsed`: calls whose reply the adapter could not parse into the signature's outputs."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    retries: int = 0
    resubmissions: int = 0
    cut_short: int = 0
    unparsed: int = 0

    def __add__(self, other: LMUsage) -> LMUsage:
        return LMUsage(**{name: getattr(self, name) + getattr(other, name) for name in self.__dataclass_fields__})

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        return {
            f"{prefix}lm_calls": float(self.calls),
            f"{prefix}prompt_tokens": float(self.prompt_tokens),
            f"{prefix}completion_tokens": float(self.completion_tokens),
            f"{prefix}lm_requests": float(self.requests),
            f"{prefix}lm_retries": float(self.retries),
            f"{prefix}lm_resubmissions": float(self.resubmissions),
            f"{prefix}lm_cut_short": float(self.cut_short),
            f"{prefix}lm_unparsed": float(self.unparsed),
        }


@dataclass
class UsageMeter:
    """Filled in when the `metered()` block exits."""

    usage: LMUsage = field(default_factory=LMUsage)


class SharedUsageTracker(UsageTracker):
    """A usage tracker that DSPy's thread pools share instead of copying, and that keeps totals per model, not an
    entry per call.

    DSPy's ParallelExecutor deep-copies the tracker into each worker (to attribute usage per prediction), so calls made
    by Evaluate or Module.batch never reach the tracker of the caller. Sharing it makes the caller's totals complete.
    DSPy's tracker keeps each call's usage (a dict per call) until its block ends, and a block hands its entries to the
    block around it: a command's outermost block held one for every call of the run.
    """

    def __init__(self) -> None:
        super().__init__()
        self.totals: dict[str, LMUsage] = {}
        self.tallies: dict[Tally, int] = {"requests": 0, "retries": 0, "resubmissions": 0, "cut_short": 0,
                                          "unparsed": 0}
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, object]) -> SharedUsageTracker:
        return self

    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:
        if usage_entry:
            self.add(lm, _call_usage(usage_entry))

    def add(self, lm: str, usage: LMUsage) -> None:
        with self._lock:
            self.totals[lm] = self.totals.get(lm, LMUsage()) + usage

    def count(self, tally: Tally, times: int = 1) -> None:
        with self._lock:
            self.tallies[tally] += times

    def per_model(self) -> dict[str, LMUsage]:
        """Calls and tokens per model, with the entries that a `dspy.track_usage` block inside this one handed up."""
        merged = dict(self.totals)
        for model, entries in self.usage_data.items():
            for entry in entries:
                merged[model] = merged.get(model, LMUsage()) + _call_usage(entry)
        return merged


def _call_usage(entry: dict[str, Any]) -> LMUsage:
    return LMUsage(calls=1, prompt_tokens=int(entry.get("prompt_tokens") or 0),
                   completion_tokens=int(entry.get("completion_tokens") or 0))


def count_tally(tally: Tally) -> None:
    """Count one request sent, one resubmission answered without sending, one answer cut short or one reply left
    unparsed, in the calling thread's `metered()`."""
    tracker = dspy.settings.usage_tracker
    if isinstance(tracker, SharedUsageTracker):
        tracker.count(tally)


@contextmanager
def metered() -> Iterator[UsageMeter]:
    """Counts the server requests (cache hits excluded) and tokens of every LM call made inside the block."""
    meter = UsageMeter()
    tracker = SharedUsageTracker()
    parent = dspy.settings.usage_tracker
    with dspy.context(usage_tracker=tracker):
        try:
            yield meter
        finally:
            per_model = tracker.per_model()
            if isinstance(parent, SharedUsageTracker):
                for model, usage in per_model.items():
                    parent.add(model, usage)
                for tally, times in tracker.tallies.items():
                    parent.count(tally, times)
            elif parent is not None:  # a dspy.track_usage block around this one: its entries, one per model
                for model, usage in per_model.items():
                    parent.add_usage(model, {"prompt_tokens": usage.prompt_tokens,
                                             "completion_tokens": usage.completion_tokens,
                                             "total_tokens": usage.prompt_tokens + usage.completion_tokens})
            total = sum(per_model.values(), LMUsage())
            meter.usage = LMUsage(calls=total.calls, prompt_tokens=total.prompt_tokens,
                                  completion_tokens=total.completion_tokens, **tracker.tallies)
