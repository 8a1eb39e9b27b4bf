"""Ranking response models from pairwise comparisons, and comparing a ranking with a reference one (SenseJudge's
model ranking, seeds/004 §4.2.2).

Wins: each model's share of the comparisons it took part in and won. Bradley-Terry: strengths p with
P(i beats j) = p_i / (p_i + p_j), fitted by Hunter's (2004) MM algorithm; `prior` adds that many wins to each side of
every compared pair, so that a model that never wins (or never loses) still gets a finite strength. Scores are log
strengths centred on 0. Rank correlations (Kendall's tau-b, Spearman's rho) come from scipy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Comparison:
    """One judgment between two models' responses; `winner` is one of them, or None when the judgment failed."""

    first: str
    second: str
    winner: str | None


@dataclass(frozen=True)
class RankCorrelation:
    kendall_tau: float
    kendall_p: float
    spearman_rho: float
    spearman_p: float
    models: int


def win_rates(comparisons: Iterable[Comparison]) -> dict[str, float]:
    """Each model's share of won comparisons; failed judgments count for neither side."""
    played: Counter[str] = Counter()
    won: Counter[str] = Counter()
    for comparison in comparisons:
        if comparison.winner is None:
            continue
        played.update((comparison.first, comparison.second))
        won[comparison.winner] += 1
    return {model: won[model] / played[model] for model in sorted(played)}


def bradley_terry(
    comparisons: Iterable[Comparison], *, prior: float = 0.5, max_iterations: int = 10_000, tolerance: float = 1e-10
) -> dict[str, float]:
    """Bradley-Terry log strengths (mean 0) of every model that took part in a decided comparison."""
    decided = [comparison for comparison in comparisons if comparison.winner is not None]
    models = sorted({model for comparison in decided for model in (comparison.first, comparison.second)})
    if not models:
        return {}
    index = {model: i for i, model in enumerate(models)}
    wins = np.zeros((len(models), len(models)))
    for comparison in decided:
        loser = comparison.second if comparison.winner == comparison.first else comparison.first
        wins[index[comparison.winner], index[loser]] += 1
    games = wins + wins.T
    wins = wins + prior * (games > 0)
    games = wins + wins.T
    strengths = np.ones(len(models))
    for _ in range(max_iterations):
        updated = wins.sum(axis=1) / (games / (strengths[:, None] + strengths[None, :])).sum(axis=1)
        updated /= np.exp(np.log(updated).mean())
        converged = np.max(np.abs(updated - strengths)) < tolerance
        strengths = updated
        if converged:
            break
    return dict(zip(models, np.log(strengths).tolist(), strict=True))


def ranking(scores: Mapping[str, float]) -> list[str]:
    """Models best first; equal scores in name order."""
    return sorted(scores, key=lambda model: (-scores[model], model))


def ranking_scores(order: Sequence[str]) -> dict[str, float]:
    """A ranking (best first) as scores, higher for better, for `rank_correlation`."""
    return {model: float(-position) for position, model in enumerate(order)}


def rank_correlation(scores: Mapping[str, float], reference: Mapping[str, float]) -> RankCorrelation:
    """Kendall's tau-b and Spearman's rho between `scores` and `reference` scores (higher is better; ties allowed),
    over the models both know. NaN when fewer than two models are shared or one side is constant."""
    from scipy.stats import kendalltau, spearmanr

    shared = sorted(set(scores) & set(reference))
    judged, expected = [scores[model] for model in shared], [reference[model] for model in shared]
    if len(shared) < 2 or len(set(judged)) < 2 or len(set(expected)) < 2:
        return RankCorrelation(float("nan"), float("nan"), float("nan"), float("nan"), len(shared))
    tau = kendalltau(judged, expected)
    rho = spearmanr(judged, expected)
    return RankCorrelation(float(tau.statistic), float(tau.pvalue), float(rho.statistic), float(rho.pvalue),
                           len(shared))
