"""PrefAlign and NormAlign on hand-computed cases, the undefined case included."""

import math

import pytest

from prefcraft.metrics.prefdisco import norm_align, pref_align, summarize_norm_align


def test_pref_align_is_the_weighted_sum_of_grades():
    assert pref_align([0.5, 0.3, 0.2], [5, 3, 1]) == pytest.approx(2.5 + 0.9 + 0.2)
    assert pref_align([1.0], [4]) == 4.0
    with pytest.raises(ValueError):
        pref_align([0.5, 0.5], [3])


def test_norm_align_on_hand_computed_cases():
    assert norm_align(discovery=3.0, baseline=2.0, oracle=4.0) == pytest.approx(50.0)
    assert norm_align(discovery=4.0, baseline=2.0, oracle=4.0) == pytest.approx(100.0)
    assert norm_align(discovery=1.5, baseline=2.0, oracle=4.0) == pytest.approx(-25.0)
    assert norm_align(discovery=3.0, baseline=4.0, oracle=2.0) == pytest.approx(50.0)  # oracle below baseline


def test_norm_align_is_undefined_when_the_oracle_scores_as_the_baseline():
    assert norm_align(discovery=3.0, baseline=2.6, oracle=2.6) is None
    assert norm_align(discovery=2.6, baseline=0.1 + 0.2, oracle=0.3) is None  # within rounding


def test_the_summary_counts_undefined_scenarios_and_the_negative_share():
    summary = summarize_norm_align([50.0, -25.0, None, 100.0, None])
    assert summary.undefined == 2 and summary.scenarios == 5
    assert summary.mean.n == 3 and summary.mean.mean == pytest.approx((0.5 - 0.25 + 1.0) / 3)
    assert summary.negative_share.mean == pytest.approx(1 / 3)
    assert summary.mean.low <= summary.mean.mean <= summary.mean.high


def test_a_summary_with_nothing_defined_says_so():
    summary = summarize_norm_align([None, None])
    assert summary.undefined == 2 and summary.mean.n == 0 and math.isnan(summary.mean.mean)
