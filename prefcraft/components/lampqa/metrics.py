"""LaMP-QA's aspect score (seeds/003, Algorithm 1) and its aggregates.

A judge scores a response 0 / 1 / 2 on each gold aspect of the question; the question's score is
Σ scores / (2 · #aspects). Per category, a method's score is the mean over the category's questions (the reference
code scores one category's file at a time). The headline is the paper's Table 2 "Average (macro)": the mean of the
category means, each category weighing the same whatever its size; the mean pooled over all questions is reported
beside it. Intervals are 95% bootstraps that resample questions (within categories for the macro mean). A judgment
that failed (None) scores 0, as the reference code scores a judgment it could not parse, and is counted with its
reason; so does a question whose answer failed (the reference judges its empty answer). A method's
relative gain is (its macro mean - the baseline's) / the baseline's: the paper's "up to 39%" (PlanPers against no
personalization with Gemma 2, 0.4566 / 0.3270 - 1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import dspy

from prefcraft.engine.item_failures import reason_kind
from prefcraft.metrics.stats import Estimate, bootstrap_mean, macro_mean
from prefcraft.programs.lampqa import AspectJudge


def question_score(scores: Sequence[int | None]) -> float:
    """Σ aspect scores / (2 · #aspects); a failed judgment (None) counts as 0."""
    if not scores:
        raise ValueError("a question needs at least one aspect to be scored")
    return sum(score or 0 for score in scores) / (2 * len(scores))


@dataclass(frozen=True)
class QuestionResult:
    """One method's result on one question: the aspect scores of its answer (empty when the answer failed), why the
    answer failed (`answer_failure`) and why each failed judgment failed (`judge_failures`, None where it did not)."""

    question_id: str
    category: str
    scores: tuple[int | None, ...]
    answer_failure: str | None = None
    judge_failures: tuple[str | None, ...] = ()

    @property
    def answer_failed(self) -> bool:
        return self.answer_failure is not None

    @property
    def score(self) -> float:
        return 0.0 if self.answer_failed else question_score(self.scores)

    @property
    def failed_judgments(self) -> int:
        return sum(score is None for score in self.scores)


@dataclass(frozen=True)
class MethodReport:
    overall: Estimate
    """The headline: the macro mean over categories (the paper's), n counting every question."""
    pooled: Estimate
    """The mean over all questions pooled, reported beside the headline."""
    by_category: dict[str, Estimate] = field(default_factory=dict)
    failed_answers: int = 0
    failed_judgments: int = 0
    failure_kinds: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per step (answer, judge), how many calls failed of each kind (the reason's first word: adapter_parse_error,
    context_window_exceeded, ...)."""

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        metrics = {"score": self.overall.mean, "score_low": self.overall.low, "score_high": self.overall.high,
                   "score_pooled": self.pooled.mean, "questions": float(self.overall.n),
                   "failed_answers": float(self.failed_answers), "failed_judgments": float(self.failed_judgments)}
        metrics.update({f"score_{category}": estimate.mean for category, estimate in self.by_category.items()})
        return {f"{prefix}{name}": value for name, value in metrics.items() if value == value}  # NaN: no interval


def method_report(results: Sequence[QuestionResult], *, seed: int = 0) -> MethodReport:
    """The macro mean over categories (headline), the pooled mean and each category's mean, with intervals."""
    categories = sorted({result.category for result in results})
    scores = {category: [r.score for r in results if r.category == category] for category in categories}
    return MethodReport(
        overall=macro_mean(list(scores.values()), seed=seed),
        pooled=bootstrap_mean([result.score for result in results], seed=seed),
        by_category={category: bootstrap_mean(values, seed=seed) for category, values in scores.items()},
        failed_answers=sum(result.answer_failed for result in results),
        failed_judgments=sum(result.failed_judgments for result in results),
        failure_kinds={"answer": _kinds(result.answer_failure for result in results),
                       "judge": _kinds(reason for result in results for reason in result.judge_failures)},
    )


def _kinds(reasons: Iterable[str | None]) -> dict[str, int]:
    return dict(sorted(Counter(reason_kind(reason) for reason in reasons if reason is not None).items()))


def relative_gain(score: float, baseline: float) -> float:
    """(score - baseline) / baseline; NaN when the baseline is 0 (no gain is defined over nothing)."""
    return (score - baseline) / baseline if baseline else float("nan")


class AspectScore:
    """The compile metric: the question's aspect score of the prediction's answer, each gold aspect judged by
    `AspectJudge` (asking again up to `retries` times for a reply that does not parse) in `grader()`, the judge model's
    context."""

    def __init__(self, grader: Callable[[], AbstractContextManager[Any]], retries: int = 0):
        self.grader = grader
        self.judge = AspectJudge(retries)

    def __call__(self, example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float:
        with self.grader():
            scores = self.judge(question=example.question, details=example.narrative, response=prediction.answer,
                                aspects=example.rubric_aspects).scores
        return question_score(scores)
