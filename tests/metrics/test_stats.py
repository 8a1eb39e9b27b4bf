import math

from prefcraft.metrics.stats import bootstrap_mean


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
