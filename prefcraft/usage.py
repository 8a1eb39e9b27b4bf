"""LM calls and tokens spent inside a block, from DSPy's own usage tracker (cache hits cost nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import dspy
from dspy.utils.usage_tracker import UsageTracker


@dataclass
class LMUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: LMUsage) -> LMUsage:
        return LMUsage(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        return {
            f"{prefix}lm_calls": float(self.calls),
            f"{prefix}prompt_tokens": float(self.prompt_tokens),
            f"{prefix}completion_tokens": float(self.completion_tokens),
        }


@dataclass
class UsageMeter:
    """Filled in when the `metered()` block exits."""

    usage: LMUsage = field(default_factory=LMUsage)


class SharedUsageTracker(UsageTracker):
    """A usage tracker that DSPy's thread pools share instead of copying.

    DSPy's ParallelExecutor deep-copies the tracker into each worker (to attribute usage per prediction), so calls made
    by Evaluate or Module.batch never reach the tracker of the caller. Sharing it makes the caller's totals complete.
    """

    def __deepcopy__(self, memo: dict[int, object]) -> SharedUsageTracker:
        return self


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
            if parent is not None:
                for model, entries in tracker.usage_data.items():
                    parent.usage_data[model].extend(entries)
            entries = [entry for per_model in tracker.usage_data.values() for entry in per_model]
            meter.usage = LMUsage(
                calls=len(entries),
                prompt_tokens=sum(int(entry.get("prompt_tokens") or 0) for entry in entries),
                completion_tokens=sum(int(entry.get("completion_tokens") or 0) for entry in entries),
            )
