import math
import warnings

import numpy as np
import pytest
from scipy.stats import bootstrap

from prefcraft.metrics.stats import (
    Estimate,
    bootstrap_mean,
    cluster_bootstrap_mean,
    macro_mean,
    reference_bootstrap_mean,
)


def test_mean_and_interval_bracket_the_data():
    estimate = bootstrap_mean([1, 0, 1, 1, 0, 1, 1, 0], seed=3)
    assert estimate.mean == 5 / 8
    assert 0 <= estimate.low <= estimate.mean <= estimate.high <= 1
    assert estimate.n == 8


def test_constant_data_has_a_degenerate_interval():
    estimate = bootstrap_mean([1.0] * 20)
    assert (estimate.low, estimate.mean, estimate.high) == (1.0, 1.0, 1.0)


def test_interval_narrows_with_more_data():
    small = bootstrap_mean([1, 0] * 5)
    large = bootstrap_mean([1, 0] * 500)
    assert (large.high - large.low) < (small.high - small.low)


def test_same_seed_same_interval_and_empty_input_is_nan():
    assert bootstrap_mean([1, 0, 1], seed=7) == bootstrap_mean([1, 0, 1], seed=7)
    assert math.isnan(bootstrap_mean([]).mean)


def test_the_interval_is_scipys_percentile_bootstrap():
    values = [1, 0, 1, 1, 0, 1, 1, 0, 0, 1]
    expected = bootstrap((np.array(values, dtype=float),), np.mean, method="percentile", n_resamples=1000,
                         rng=np.random.default_rng(5)).confidence_interval
    estimate = bootstrap_mean(values, seed=5)
    assert (estimate.low, estimate.high) == pytest.approx((expected.low, expected.high))


def test_cluster_mean_is_over_every_value():
    estimate = cluster_bootstrap_mean([[1, 1], [0], [1, 0, 1]])
    assert estimate.mean == pytest.approx(4 / 6)
    assert estimate.n == 6


def test_correlated_clusters_give_a_wider_interval_than_their_values_alone():
    clusters = [[1, 1], [0, 0]] * 10
    per_cluster = cluster_bootstrap_mean(clusters)
    per_value = bootstrap_mean([value for cluster in clusters for value in cluster])
    assert per_cluster.mean == per_value.mean == 0.5
    assert (per_cluster.high - per_cluster.low) > (per_value.high - per_value.low)


@pytest.mark.parametrize(
    ("clusters", "expected"),
    [
        ([], Estimate(math.nan, math.nan, math.nan, 0)),
        ([[]], Estimate(math.nan, math.nan, math.nan, 0)),
        ([[1.0]], Estimate(1.0, math.nan, math.nan, 1)),
        ([[1.0, 0.0]], Estimate(0.5, math.nan, math.nan, 2)),
        ([[0.1]] * 7, Estimate(0.1, 0.1, 0.1, 7)),
        ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0, 0.0, 0.0]], Estimate(0.5, 0.5, 0.5, 8)),
    ],
)
def test_degenerate_inputs_give_a_sensible_estimate_without_warnings(clusters, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate = cluster_bootstrap_mean(clusters)
        if all(len(cluster) == 1 for cluster in clusters):
            assert _same(bootstrap_mean([value for [value] in clusters]), estimate)
    assert _same(estimate, expected)


def test_an_estimate_without_an_interval_says_so():
    assert str(bootstrap_mean([1.0])) == "100.0% [no interval] (n=1)"
    assert str(bootstrap_mean([1.0, 0.0, 1.0, 0.0])).startswith(" 50.0% [")


def _same(estimate: Estimate, expected: Estimate) -> bool:
    return estimate.n == expected.n and np.allclose(
        [estimate.mean, estimate.low, estimate.high], [expected.mean, expected.low, expected.high], equal_nan=True
    )


def test_macro_mean_weighs_each_group_the_same():
    estimate = macro_mean([[1.0], [0.0, 0.0, 0.0]])
    assert estimate.mean == pytest.approx(0.5) and estimate.n == 4
    assert estimate.low == pytest.approx(0.5) == estimate.high  # each group is constant
    assert math.isnan(macro_mean([]).mean) and macro_mean([[], [0.25]]).mean == 0.25


def test_the_reference_interval_is_scipys_basic_bootstrap_with_9999_resamples():
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    estimate = reference_bootstrap_mean(values, seed=4)
    expected = bootstrap((np.array(values),), np.mean, confidence_level=0.95, method="basic", n_resamples=9999,
                         rng=np.random.default_rng(4)).confidence_interval
    assert estimate.mean == pytest.approx(0.7) and estimate.n == 10
    assert (estimate.low, estimate.high) == pytest.approx((expected.low, expected.high), abs=1e-9)
    # The basic interval reflects the percentile one around the mean: 2·mean - the percentile bounds.
    percentile = bootstrap_mean(values, n_resamples=9999, seed=4)
    assert estimate.low == pytest.approx(2 * 0.7 - percentile.high, abs=1e-9)
    assert estimate.high == pytest.approx(2 * 0.7 - percentile.low, abs=1e-9)


def test_the_interval_is_the_same_in_any_batch_of_resamples(monkeypatch):
    import prefcraft.metrics.stats as stats

    values = np.random.default_rng(5).integers(0, 2, 3_000).tolist()
    in_batches_of_83 = reference_bootstrap_mean(values, seed=1)
    monkeypatch.setattr(stats, "BOOTSTRAP_VALUES", 7 * 3_000)  # batches of 7 resamples
    assert reference_bootstrap_mean(values, seed=1) == in_batches_of_83


def test_an_interval_over_many_judgments_holds_about_the_same_memory_as_over_few():
    import tracemalloc

    def peak_of(n: int) -> int:
        values = np.random.default_rng(5).integers(0, 2, n).tolist()
        tracemalloc.start()
        try:
            reference_bootstrap_mean(values)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert peak_of(20_000) < 40 * 2**20  # in fixed batches of 100 resamples: 86 MB at 19,200 judgments
    assert peak_of(100_000) < 1.5 * peak_of(20_000) + 10 * 2**20  # the judgments themselves, not resamples of them
