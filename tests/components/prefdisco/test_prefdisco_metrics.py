"""PrefAlign and both NormAlign forms on hand-computed cases from the paper's definitions (seeds/000 Eq. 1-2)."""

import math

import pytest

from prefcraft.components.prefdisco.metrics import (
    ConditionScores,
    missing_grades,
    negative_count,
    norm_align,
    norm_align_of_means,
    pref_align,
    summarize_norm_align,
)


def test_pref_align_is_the_weighted_average_of_grades():
    assert pref_align([0.5, 0.3, 0.2], [5, 3, 1]) == pytest.approx(2.5 + 0.9 + 0.2)
    assert pref_align([1.0], [4]) == 4.0
    with pytest.raises(ValueError):
        pref_align([0.5, 0.5], [3])
    with pytest.raises(ValueError, match="sum to zero"):
        pref_align([0.0, 0.0], [3, 4])


def test_pref_align_stays_on_the_1_to_5_scale_when_the_weights_do_not_sum_to_1():
    # The loader accepts weights summing to 1 ± 0.05; a weighted sum would give 5 x 1.04 = 5.20 here.
    assert pref_align([0.54, 0.5], [5, 5]) == pytest.approx(5.0)
    assert pref_align([0.48, 0.48], [1, 1]) == pytest.approx(1.0)
    # (0.6·4 + 0.44·2) / 1.04 = 3.28 / 1.04
    assert pref_align([0.6, 0.44], [4, 2]) == pytest.approx(3.28 / 1.04)
    assert pref_align([3, 1], [5, 1]) == pytest.approx(4.0)  # raw importances: the same as their normalized weights


def test_a_missing_grade_counts_as_1_and_is_counted():
    grades = [5, None, 3]
    assert pref_align([0.5, 0.25, 0.25], grades) == pytest.approx(0.5 * 5 + 0.25 * 1 + 0.25 * 3)
    assert missing_grades(grades) == 1 and missing_grades([4, 4]) == 0
    assert pref_align([1.0], [None]) == 1.0


def test_norm_align_on_hand_computed_cases():
    assert norm_align(discovery=3.0, baseline=2.0, oracle=4.0) == pytest.approx(50.0)
    assert norm_align(discovery=4.0, baseline=2.0, oracle=4.0) == pytest.approx(100.0)
    assert norm_align(discovery=1.5, baseline=2.0, oracle=4.0) == pytest.approx(-25.0)
    assert norm_align(discovery=3.0, baseline=4.0, oracle=2.0) == pytest.approx(50.0)  # oracle below baseline


def test_norm_align_is_undefined_when_the_oracle_scores_as_the_baseline():
    assert norm_align(discovery=3.0, baseline=2.6, oracle=2.6) is None
    assert norm_align(discovery=2.6, baseline=0.1 + 0.2, oracle=0.3) is None  # within rounding


# Three scenarios. Per scenario: (3-2)/(4-2) = 50, (2-3)/(5-3) = -50, undefined (oracle = baseline = 3).
# Of the condition means: D = 8/3, B = 8/3, O = 4 -> 100 x 0 / (4/3) = 0.
SCORES = ConditionScores(discovery=[3.0, 2.0, 3.0], baseline=[2.0, 3.0, 3.0], oracle=[4.0, 5.0, 3.0])


def test_the_papers_form_divides_the_gaps_of_the_condition_means():
    estimate = norm_align_of_means(SCORES)
    assert estimate.mean == pytest.approx(0.0) and estimate.n == 3
    assert estimate.low <= estimate.mean <= estimate.high
    # D = 3, B = 2, O = 3.5 over two scenarios -> (3 - 2) / (3.5 - 2) = 2/3.
    two = ConditionScores(discovery=[3.5, 2.5], baseline=[2.0, 2.0], oracle=[4.0, 3.0])
    assert norm_align_of_means(two).mean == pytest.approx(2 / 3)


def test_the_papers_form_differs_from_the_mean_of_per_scenario_values():
    # Per scenario: (2-1)/(5-1) = 25 and (4-3)/(3.5-3) = 200, mean 112.5; of means: (3-2)/(4.25-2) = 44.4.
    scores = ConditionScores(discovery=[2.0, 4.0], baseline=[1.0, 3.0], oracle=[5.0, 3.5])
    summary = summarize_norm_align(scores)
    assert summary.per_scenario.mean == pytest.approx(1.125)
    assert summary.of_means.mean == pytest.approx(1 / 2.25)


def test_the_papers_form_is_undefined_when_the_oracle_mean_equals_the_baseline_mean():
    scores = ConditionScores(discovery=[3.0, 2.0], baseline=[2.0, 4.0], oracle=[4.0, 2.0])
    assert math.isnan(norm_align_of_means(scores).mean)  # per scenario both are defined: 50 and 100
    assert summarize_norm_align(scores).per_scenario.mean == pytest.approx(0.75)
    assert math.isnan(norm_align_of_means(ConditionScores((), (), ())).mean)
    single = norm_align_of_means(ConditionScores([3.0], [2.0], [4.0]))
    assert single.mean == pytest.approx(0.5) and math.isnan(single.low)


def test_the_summary_gives_both_forms_and_counts_undefined_scenarios():
    summary = summarize_norm_align(SCORES)
    assert summary.undefined == 1 and summary.scenarios == 3
    assert summary.of_means.mean == pytest.approx(0.0)
    assert summary.per_scenario.n == 2 and summary.per_scenario.mean == pytest.approx(0.0)
    assert summary.per_scenario_negative_share.mean == pytest.approx(0.5)


def test_a_summary_with_nothing_defined_says_so():
    summary = summarize_norm_align(ConditionScores([3.0, 2.0], [2.0, 2.0], [2.0, 2.0]))
    assert summary.undefined == 2 and summary.per_scenario.n == 0 and math.isnan(summary.per_scenario.mean)
    assert math.isnan(summary.of_means.mean)


def test_negative_count_is_over_the_defined_values():
    # The paper's figure: 61 of 210 model-task pairs (29.0%) negative.
    assert negative_count([-0.1, 0.2, float("nan"), 0.0, -0.3]) == (2, 4)
    assert negative_count([]) == (0, 0)


def test_the_interval_of_norm_align_of_means_is_the_same_in_batches_of_resamples_as_all_at_once(monkeypatch):
    import numpy as np

    from prefcraft.metrics import stats

    rng = np.random.default_rng(7)
    scores = ConditionScores(*(tuple(rng.uniform(1, 5, 40)) for _ in range(3)))
    table = np.array([scores.discovery, scores.baseline, scores.oracle]).T
    means = table[np.random.default_rng(0).integers(0, 40, size=(250, 40))].mean(axis=1)  # all at once, by hand
    expected = np.quantile([v for v in (norm_align(*row) for row in means) if v is not None], [0.025, 0.975]) / 100
    monkeypatch.setattr(stats, "BOOTSTRAP_VALUES", 7 * 40 * 3)  # 250 resamples: 35 batches of 7, then 5
    estimate = norm_align_of_means(scores, n_resamples=250, seed=0)
    assert (estimate.low, estimate.high) == pytest.approx(tuple(expected))


def test_the_interval_over_the_papers_10000_scenarios_holds_a_batch_of_resamples_at_a_time():
    import tracemalloc

    import numpy as np

    rng = np.random.default_rng(7)
    scores = ConditionScores(*(tuple(rng.uniform(1, 5, 10_000)) for _ in range(3)))
    tracemalloc.start()
    try:
        norm_align_of_means(scores)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * 2**20  # all 1,000 resamples at once: 320 MB
