"""CUPID's scores (seeds/001 §4; where the paper is silent, the reference code kixlab/CUPID evaluation/pipeline).

Each instance yields two coverage lists, one value per checklist item (Fully 1, Partially 0.5, Not 0): the inferred
preference's checklist items covered by the gold preference (precision side) and the gold checklist's items covered by
the inferred preference (recall side). The paper's figures are micro scores: the matched counts are pooled over
instances, P = Σ predicted matched / Σ predicted items, R = Σ true matched / Σ true items, F1 = 2PR / (P + R).
Per-instance means of P, R and F1 are reported beside them. Every interval resamples whole instances.

Failures count as the reference code counts them: a label the matcher did not give (or gave outside the three) is Not
covered; a failed matcher call leaves every item of both lists Not covered, the inferred items staying in the
precision denominator (`ChecklistMatch.unmatched`); an instance whose inference failed (the decomposition into a
checklist is part of inference there) is left out of the scores and counted apart, unless its prompt was over the
context window: then it is kept with an empty checklist (every gold item Not covered, recall 0) and counted.

The response judge's 1-10 is read as the reference reads it (`judge_score`): the text before any "/", then before any
".", then before any blank line, without "**"; what is then no number scores 0, and so does a failed judge call. A
response score (`response_scores`) is the mean over the responses judged, and over the generations whose prompt was
over the context window (0 each), over all instances or over one instance type's (the paper's Table 3 columns), with
the same failure rules in each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import dspy
import numpy as np

from prefcraft.metrics.stats import NO_INTERVAL, Estimate, bootstrap_mean, cluster_bootstrap_mean
from prefcraft.programs.cupid import ChecklistMatch, harmonic_mean


@dataclass(frozen=True)
class MatchReport:
    """Pooled (micro) and per-instance precision, recall and F1, each with a 95% bootstrap interval over instances."""

    precision: Estimate
    recall: Estimate
    f1: Estimate
    mean_precision: Estimate
    mean_recall: Estimate
    mean_f1: Estimate
    instances: int
    """Instances scored: those whose inference succeeded."""
    inference_failures: int = 0
    """Instances left out of the scores because their inference (or its decomposition) failed."""
    context_overflows: int = 0
    """Scored instances whose prompt was over the context window: an empty checklist, every gold item Not covered."""
    matcher_failures: int = 0
    """Scored instances whose matcher call failed: all their items count as Not covered."""
    missing_labels: int = 0

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        metrics = {"instances": float(self.instances), "inference_failures": float(self.inference_failures),
                   "context_overflows": float(self.context_overflows),
                   "matcher_failures": float(self.matcher_failures), "missing_labels": float(self.missing_labels)}
        for name in ("precision", "recall", "f1", "mean_precision", "mean_recall", "mean_f1"):
            estimate: Estimate = getattr(self, name)
            metrics.update({name: estimate.mean, f"{name}_low": estimate.low, f"{name}_high": estimate.high})
        return {f"{prefix}{name}": value for name, value in metrics.items() if value == value}  # NaN: no interval


def micro_scores(matches: Sequence[ChecklistMatch]) -> tuple[float, float, float]:
    """Pooled precision, recall and F1 over instances, exactly as the paper computes them."""
    predicted = [value for match in matches for value in match.predicted_coverage]
    true = [value for match in matches for value in match.true_coverage]
    precision = sum(predicted) / len(predicted) if predicted else 0.0
    recall = sum(true) / len(true) if true else 0.0
    return precision, recall, harmonic_mean(precision, recall)


def match_report(
    matches: Sequence[ChecklistMatch], *, inference_failures: int = 0, context_overflows: int = 0,
    matcher_failures: int = 0, seed: int = 0, n_resamples: int = 1000,
) -> MatchReport:
    """P, R and F1 pooled over the scored instances' `matches` and averaged per instance, with intervals that resample
    instances; the failures are counts to report beside them (`matches` already holds the matcher failures and the
    context overflows)."""
    options = {"seed": seed, "n_resamples": n_resamples}
    return MatchReport(
        precision=cluster_bootstrap_mean([m.predicted_coverage for m in matches], **options),
        recall=cluster_bootstrap_mean([m.true_coverage for m in matches], **options),
        f1=micro_f1_estimate(matches, **options),
        mean_precision=bootstrap_mean([m.precision for m in matches], **options),
        mean_recall=bootstrap_mean([m.recall for m in matches], **options),
        mean_f1=bootstrap_mean([m.f1 for m in matches], **options),
        instances=len(matches),
        inference_failures=inference_failures,
        context_overflows=context_overflows,
        matcher_failures=matcher_failures,
        missing_labels=sum(m.missing_labels for m in matches),
    )


def micro_f1_estimate(
    matches: Sequence[ChecklistMatch], *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0
) -> Estimate:
    """The pooled F1 with a percentile bootstrap interval: each resample draws instances and pools their counts."""
    if not matches:
        return Estimate(float("nan"), NO_INTERVAL, NO_INTERVAL, 0)
    f1 = micro_scores(matches)[2]
    if len(matches) < 2:
        return Estimate(f1, NO_INTERVAL, NO_INTERVAL, len(matches))
    counts = np.array([[sum(m.predicted_coverage), len(m.predicted_coverage), sum(m.true_coverage),
                        len(m.true_coverage)] for m in matches])
    draws = np.random.default_rng(seed).integers(0, len(matches), size=(n_resamples, len(matches)))
    pooled = counts[draws].sum(axis=1)  # (n_resamples, 4)
    precision = np.divide(pooled[:, 0], pooled[:, 1], out=np.zeros(n_resamples), where=pooled[:, 1] > 0)
    recall = np.divide(pooled[:, 2], pooled[:, 3], out=np.zeros(n_resamples), where=pooled[:, 3] > 0)
    total = precision + recall
    f1s = np.divide(2 * precision * recall, total, out=np.zeros(n_resamples), where=total > 0)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(f1s, [alpha, 1 - alpha])
    return Estimate(f1, float(low), float(high), len(matches))


def judge_score(raw: object) -> float | None:
    """The judge's 1-10 as the reference code reads it: "8.5" -> 8, "7/10" -> 7, "**9**" -> 9; None when no number
    is left (the caller scores it 0 and counts it)."""
    text = str(raw).strip()
    for separator in ("/", ".", "\n\n"):
        text = text.split(separator, 1)[0]
    try:
        return float(text.replace("**", ""))
    except ValueError:
        return None


@dataclass(frozen=True)
class ResponseScores:
    """The judge's mean 1-10 over the generated responses, a failed or unparseable judgment and a generation whose
    prompt was over the context window counting 0 (as in the reference code), and the counts of each kind of failure;
    responses whose generation failed otherwise are left out."""

    score: Estimate
    judge_failures: int
    unparseable: int
    generation_failures: int
    context_overflows: int = 0

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        metrics = {"score": self.score.mean, "score_low": self.score.low, "score_high": self.score.high,
                   "responses": float(self.score.n), "judge_failures": float(self.judge_failures),
                   "unparseable_scores": float(self.unparseable),
                   "generation_failures": float(self.generation_failures),
                   "context_overflows": float(self.context_overflows)}
        return {f"{prefix}{name}": value for name, value in metrics.items() if value == value}  # NaN: none measured


def response_scores(
    judged: Sequence[float | None], *, judge_failures: int = 0, context_overflows: int = 0,
    generation_failures: int = 0, seed: int = 0,
) -> ResponseScores:
    """`judged`: one `judge_score` per response whose judgment returned (None: unparseable); a failed judge call is
    one of `judge_failures`, a generation over the context window one of `context_overflows`, each scored 0 beside
    them; `generation_failures` are left out."""
    values = [0.0 if score is None else score for score in judged] + [0.0] * (judge_failures + context_overflows)
    return ResponseScores(bootstrap_mean(values, seed=seed), judge_failures,
                          sum(score is None for score in judged), generation_failures, context_overflows)


class PreferenceF1:
    """The compile metric: the F1 of one instance's preference match, the inferred preference against the example's
    gold preference and checklist. MIPROv2 averages it over the validation set; reports pool the matched counts
    instead (micro F1).

    `match` is the paper's matcher (`programs.cupid.PreferenceMatch`) or another program that returns its `match`;
    it runs in `grader()`, the judge model's context.
    """

    def __init__(self, match: Callable[..., dspy.Prediction], grader: Callable[[], AbstractContextManager[Any]]):
        self.match = match
        self.grader = grader

    def __call__(self, example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float:
        with self.grader():
            return self.match(preference=prediction.preference, gold_preference=example.gold_preference,
                              gold_checklist=example.gold_checklist).match.f1
