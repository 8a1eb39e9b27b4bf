"""LaMP-QA's aspect score (seeds/003, Algorithm 1) and its aggregates.

A judge scores a response 0 / 1 / 2 on each gold aspect of the question; the question's score is
Σ scores / (2 · #aspects), and a method's score is the mean over questions, reported overall and per category with a
95% bootstrap interval that resamples questions. A judgment that failed (None) scores 0 and is counted. A method's
relative gain is (its mean - the baseline's mean) / the baseline's mean: the paper's "up to 39%".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from prefcraft.metrics.stats import Estimate, bootstrap_mean


def question_score(scores: Sequence[int | None]) -> float:
    """Σ aspect scores / (2 · #aspects); a failed judgment (None) counts as 0."""
    if not scores:
        raise ValueError("a question needs at least one aspect to be scored")
    return sum(score or 0 for score in scores) / (2 * len(scores))


@dataclass(frozen=True)
class QuestionResult:
    """One method's result on one question: the aspect scores of its answer (empty when the answer failed)."""

    question_id: str
    category: str
    scores: tuple[int | None, ...]
    answer_failed: bool = False

    @property
    def score(self) -> float:
        return 0.0 if self.answer_failed else question_score(self.scores)

    @property
    def failed_judgments(self) -> int:
        return sum(score is None for score in self.scores)


@dataclass(frozen=True)
class MethodReport:
    overall: Estimate
    by_category: dict[str, Estimate] = field(default_factory=dict)
    failed_answers: int = 0
    failed_judgments: int = 0

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        metrics = {"score": self.overall.mean, "score_low": self.overall.low, "score_high": self.overall.high,
                   "questions": float(self.overall.n), "failed_answers": float(self.failed_answers),
                   "failed_judgments": float(self.failed_judgments)}
        metrics.update({f"score_{category}": estimate.mean for category, estimate in self.by_category.items()})
        return {f"{prefix}{name}": value for name, value in metrics.items() if value == value}  # NaN: no interval


def method_report(results: Sequence[QuestionResult], *, seed: int = 0) -> MethodReport:
    """The mean question score overall and per category, each with a bootstrap interval over questions."""
    categories = sorted({result.category for result in results})
    return MethodReport(
        overall=bootstrap_mean([result.score for result in results], seed=seed),
        by_category={category: bootstrap_mean([r.score for r in results if r.category == category], seed=seed)
                     for category in categories},
        failed_answers=sum(result.answer_failed for result in results),
        failed_judgments=sum(result.failed_judgments for result in results),
    )


def relative_gain(score: float, baseline: float) -> float:
    """(score - baseline) / baseline; NaN when the baseline is 0 (no gain is defined over nothing)."""
    return (score - baseline) / baseline if baseline else float("nan")
