import math

import pytest

from prefcraft.metrics.ranking import Comparison, bradley_terry, rank_correlation, ranking, ranking_scores, win_rates


def games(winner: str, loser: str, count: int) -> list[Comparison]:
    return [Comparison(winner, loser, winner) for _ in range(count)]


def test_win_rates_leave_failed_judgments_out():
    comparisons = [*games("a", "b", 3), Comparison("b", "a", "b"), Comparison("a", "c", None)]
    assert win_rates(comparisons) == {"a": 0.75, "b": 0.25}


def test_bradley_terry_recovers_the_odds_of_two_models():
    strengths = bradley_terry([*games("a", "b", 3), *games("b", "a", 1)], prior=0)
    assert strengths["a"] - strengths["b"] == pytest.approx(math.log(3), abs=1e-6)
    assert strengths["a"] + strengths["b"] == pytest.approx(0, abs=1e-9)


def test_bradley_terry_orders_a_transitive_league_and_keeps_an_unbeaten_model_finite():
    league = [*games("a", "b", 3), *games("b", "c", 3), *games("a", "c", 3), *games("b", "a", 1)]
    strengths = bradley_terry(league)
    assert ranking(strengths) == ["a", "b", "c"]
    assert all(math.isfinite(value) for value in strengths.values())


def test_a_balanced_cycle_gives_equal_strengths():
    strengths = bradley_terry([*games("a", "b", 2), *games("b", "c", 2), *games("c", "a", 2)])
    assert max(strengths.values()) - min(strengths.values()) == pytest.approx(0, abs=1e-6)
    assert ranking(strengths) == ["a", "b", "c"]  # ties in name order


def test_rank_correlations_on_known_cases():
    reference = ranking_scores(["a", "b", "c", "d"])
    same = rank_correlation({"a": 4, "b": 3, "c": 2, "d": 1}, reference)
    assert same.kendall_tau == pytest.approx(1) and same.spearman_rho == pytest.approx(1)
    reversed_ = rank_correlation({"a": 1, "b": 2, "c": 3, "d": 4}, reference)
    assert reversed_.kendall_tau == pytest.approx(-1) and reversed_.spearman_rho == pytest.approx(-1)
    one_swap = rank_correlation({"a": 3, "b": 2, "c": 1}, ranking_scores(["a", "c", "b"]))
    assert one_swap.kendall_tau == pytest.approx(1 / 3) and one_swap.spearman_rho == pytest.approx(0.5)
    assert one_swap.models == 3


def test_rank_correlation_handles_ties_and_too_little_to_compare():
    tied = rank_correlation({"a": 2, "b": 1, "c": 1}, {"a": 1.0, "b": 0.5, "c": 0.0})
    assert tied.kendall_tau == pytest.approx(2 / math.sqrt(6))  # tau-b: (2 concordant - 0) / sqrt(3 * 2)
    assert math.isnan(rank_correlation({"a": 1.0}, ranking_scores(["a", "z"])).kendall_tau)
    assert math.isnan(rank_correlation({"a": 1.0, "b": 1.0}, ranking_scores(["a", "b"])).spearman_rho)
