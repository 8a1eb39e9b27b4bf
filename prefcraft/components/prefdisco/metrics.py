"""PrefDisco's metrics (seeds/000): PrefAlign of one response, NormAlign in the paper's form and per scenario.

PrefAlign (§2.2 Eq. 1, Appendix A: "the weighted average of per-criterion scores") = Σ_j w_j g_j / Σ_j w_j with
grades g_j on 1-5, so it stays on 1-5 whatever the weights sum to (the loader accepts sums of 1 ± 0.05). A missing
grade (a criterion whose grading call failed or could not be parsed) counts as 1, as the reference code counts it,
and the missing grades are counted beside every figure.

NormAlign = 100 · (D - B) / (O - B) (§4 Eq. 2) for Discovery, Baseline and Oracle PrefAlign. The paper's Table 2 and
its "29.0% of 210 model-task pairs are negative" apply it per model and task to the three conditions' mean PrefAlign
(`norm_align_of_means`). prefcraft also reports it per scenario, averaged (`summarize_norm_align`), beside the
paper's figure. Either is undefined when Oracle equals Baseline; such cases are counted, never dropped silently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import dspy
import numpy as np

from prefcraft.components.prefdisco.data import Scenario
from prefcraft.metrics.stats import NO_INTERVAL, Estimate, bootstrap_batch, bootstrap_mean
from prefcraft.programs.prefdisco import RubricGrader

MIN_GRADE, MAX_GRADE = 1, 5


def pref_align(weights: Sequence[float], grades: Sequence[int | None]) -> float:
    """Σ weight x grade / Σ weight (the paper's weighted average); a missing grade (None) counts as 1."""
    if len(weights) != len(grades):
        raise ValueError(f"{len(grades)} grades for {len(weights)} weighted attributes")
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("the criteria's weights sum to zero: PrefAlign is a weighted average and needs a weight")
    counted = [MIN_GRADE if grade is None else grade for grade in grades]
    return sum(weight * grade for weight, grade in zip(weights, counted, strict=True)) / total


def missing_grades(grades: Sequence[int | None]) -> int:
    """How many criteria have no grade (and were counted as 1 in PrefAlign)."""
    return sum(grade is None for grade in grades)


def norm_align(discovery: float, baseline: float, oracle: float) -> float | None:
    """NormAlign in percent, or None when oracle == baseline (the gap it normalizes by is zero)."""
    gap = oracle - baseline
    if math.isclose(gap, 0.0, abs_tol=1e-9):
        return None
    return 100.0 * (discovery - baseline) / gap


@dataclass(frozen=True)
class ConditionScores:
    """PrefAlign of the same scenarios under the three conditions, in the same order."""

    discovery: Sequence[float]
    baseline: Sequence[float]
    oracle: Sequence[float]


def norm_align_of_means(
    scores: ConditionScores, *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> Estimate:
    """The paper's NormAlign (Table 2): Eq. 2 on the three conditions' mean PrefAlign over the same scenarios, as a
    fraction (1.0 = 100), with a percentile bootstrap interval that resamples scenarios. NaN when undefined (the
    Oracle mean equals the Baseline mean, or no scenario); a resample whose gap is zero is left out of the interval."""
    table = np.array([scores.discovery, scores.baseline, scores.oracle], dtype=float).T
    n = len(table)
    value = norm_align(*table.mean(axis=0)) if n else None
    if value is None:
        return Estimate(float("nan"), NO_INTERVAL, NO_INTERVAL, n)
    if n < 2:
        return Estimate(value / 100, NO_INTERVAL, NO_INTERVAL, n)
    rng = np.random.default_rng(seed)
    # In batches of resamples, drawn in the same order as all at once: at 10,000 scenarios, all 1,000 resamples at
    # once held 320 MB of indices and values (the peak of a paper-scale rehearsal).
    batch = bootstrap_batch(table.size)
    means = np.concatenate([table[rng.integers(0, n, size=(min(batch, n_resamples - start), n))].mean(axis=1)
                            for start in range(0, n_resamples, batch)])  # (n_resamples, 3)
    resampled = [v for v in (norm_align(*row) for row in means) if v is not None]
    if not resampled:
        return Estimate(value / 100, NO_INTERVAL, NO_INTERVAL, n)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(resampled, [alpha, 1 - alpha])
    return Estimate(value / 100, float(low) / 100, float(high) / 100, n)


def negative_count(values: Sequence[float]) -> tuple[int, int]:
    """(negative, defined) among NormAlign values, NaN meaning undefined: the paper's "61 of 210 (29.0%)"."""
    defined = [value for value in values if not math.isnan(value)]
    return sum(value < 0 for value in defined), len(defined)


@dataclass(frozen=True)
class NormAlignSummary:
    """NormAlign over scenarios scored in all three conditions.

    `of_means` is the paper's form (headline); `per_scenario` the mean of per-scenario NormAlign over the scenarios
    where it is defined, `per_scenario_negative_share` the share of those below 0; both as fractions (1.0 = 100).
    `undefined` counts scenarios whose Oracle equals their Baseline (left out of the per-scenario form only)."""

    of_means: Estimate
    per_scenario: Estimate
    per_scenario_negative_share: Estimate
    undefined: int
    scenarios: int


def summarize_norm_align(scores: ConditionScores, *, seed: int = 0) -> NormAlignSummary:
    values = [norm_align(*triple) for triple in zip(scores.discovery, scores.baseline, scores.oracle, strict=True)]
    defined = [value / 100.0 for value in values if value is not None]
    return NormAlignSummary(of_means=norm_align_of_means(scores, seed=seed),
                            per_scenario=bootstrap_mean(defined, seed=seed),
                            per_scenario_negative_share=bootstrap_mean([float(v < 0) for v in defined], seed=seed),
                            undefined=len(values) - len(defined), scenarios=len(values))


def grading_example(scenario: Scenario, response: str, final_answer: str) -> dspy.Example:
    """What the grader reads for one response: the response with its final answer, every criterion, the gold."""
    return dspy.Example(scenario_id=scenario.scenario_id, problem=scenario.question,
                        response=f"{response}\nFinal answer: {final_answer}",
                        criteria=[criterion.grading_text() for criterion in scenario.criteria],
                        reference_answer=scenario.answer, weights=scenario.weights,
                        ).with_inputs("problem", "response", "criteria", "reference_answer")


def grade_pref_align(example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float:
    """The grader's metric: PrefAlign (1-5) from its grades and the example's weights."""
    return pref_align(example.weights, prediction.grades)


class GatedPrefAlign:
    """The compile metric: PrefAlign / 5 of the asker's final answer when the answer is correct, else 0.

    The scenario's rubric and gold answer are looked up by the example's scenario id. Grading runs in
    `judge_context()` (the judge model), one call per criterion plus one correctness call.
    """

    def __init__(self, scenarios: Mapping[str, Scenario], judge_context: Callable[[], AbstractContextManager[Any]]):
        self.scenarios = dict(scenarios)
        self.judge_context = judge_context
        self.grader = RubricGrader()

    def __call__(self, example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float:
        graded = grading_example(self.scenarios[example.scenario_id], prediction.response, prediction.final_answer)
        with self.judge_context():
            grades = self.grader(**graded.inputs())
        return grade_pref_align(graded, grades) / MAX_GRADE if grades.correct else 0.0
