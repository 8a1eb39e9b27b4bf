"""Aggregates over per-item scores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    """A mean with its bootstrap confidence interval, over `n` items."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{100 * self.mean:5.1f}% [{100 * self.low:5.1f}, {100 * self.high:5.1f}] (n={self.n})"


def bootstrap_mean(
    values: Sequence[float], *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> Estimate:
    """The mean of `values` with a percentile bootstrap confidence interval."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    rng = np.random.default_rng(seed)
    means = rng.choice(data, size=(n_resamples, data.size), replace=True).mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Estimate(float(data.mean()), float(low), float(high), int(data.size))
