"""PrefDisco's metrics: PrefAlign of one response, NormAlign of one scenario, and their aggregates over scenarios.

PrefAlign(r) = sum_j w_j * g_j(r, v_j), with grades g_j on 1-5 and weights summing to 1, so PrefAlign is on 1-5.
NormAlign = 100 * (PrefAlign(discovery) - PrefAlign(baseline)) / (PrefAlign(oracle) - PrefAlign(baseline)); it is
undefined when the oracle scores exactly as the baseline, and such scenarios are counted, never dropped silently.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from prefcraft.metrics.stats import Estimate, bootstrap_mean

MIN_GRADE, MAX_GRADE = 1, 5


def pref_align(weights: Sequence[float], grades: Sequence[int]) -> float:
    """Sum of weight x grade over the profile's attributes."""
    if len(weights) != len(grades):
        raise ValueError(f"{len(grades)} grades for {len(weights)} weighted attributes")
    return float(sum(weight * grade for weight, grade in zip(weights, grades, strict=True)))


def norm_align(discovery: float, baseline: float, oracle: float) -> float | None:
    """NormAlign in percent, or None when oracle == baseline (the gap it normalizes by is zero)."""
    gap = oracle - baseline
    if math.isclose(gap, 0.0, abs_tol=1e-9):
        return None
    return 100.0 * (discovery - baseline) / gap


@dataclass(frozen=True)
class NormAlignSummary:
    """NormAlign over scenarios: the mean over the defined ones (as a fraction: 1.0 = 100), the share of them that
    are negative (discovery below baseline), and how many were undefined."""

    mean: Estimate
    negative_share: Estimate
    undefined: int
    scenarios: int


def summarize_norm_align(values: Sequence[float | None], *, seed: int = 0) -> NormAlignSummary:
    defined = [value / 100.0 for value in values if value is not None]
    return NormAlignSummary(mean=bootstrap_mean(defined, seed=seed),
                            negative_share=bootstrap_mean([float(value < 0) for value in defined], seed=seed),
                            undefined=len(values) - len(defined), scenarios=len(values))
