"""CUPID's preference-match scores against hand-computed cases."""

import math

import pytest

from prefcraft.metrics.cupid import ChecklistMatch, match_report, micro_f1_estimate, micro_scores


def test_one_instance_scores_as_the_paper_defines_them():
    # Inferred checklist of 4 items against the gold preference: 1 + 0.5 + 0 + 0 = 1.5 of 4.
    # Gold checklist of 2 items against the inferred preference: 1 + 0.5 = 1.5 of 2.
    match = ChecklistMatch(predicted_coverage=[1.0, 0.5, 0.0, 0.0], true_coverage=[1.0, 0.5])
    assert match.precision == pytest.approx(0.375)
    assert match.recall == pytest.approx(0.75)
    assert match.f1 == pytest.approx(2 * 0.375 * 0.75 / 1.125)  # 0.5


def test_micro_scores_pool_the_counts_instead_of_averaging_instances():
    a = ChecklistMatch([1.0, 1.0, 1.0, 1.0], [1.0])   # P 4/4, R 1/1
    b = ChecklistMatch([0.0], [0.0, 0.0, 0.5])        # P 0/1, R 0.5/3
    precision, recall, f1 = micro_scores([a, b])
    assert precision == pytest.approx(4 / 5)
    assert recall == pytest.approx(1.5 / 4)
    assert f1 == pytest.approx(2 * 0.8 * 0.375 / (0.8 + 0.375))
    mean_f1 = (a.f1 + b.f1) / 2
    assert not math.isclose(f1, mean_f1)  # 0.51 pooled vs 0.5 averaged: the two are different figures


def test_nothing_inferred_scores_zero_and_adds_no_predicted_items():
    empty = ChecklistMatch([], [0.0, 0.0])
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
    full = ChecklistMatch([1.0], [1.0])
    assert micro_scores([empty, full]) == pytest.approx((1.0, 1 / 3, 0.5))  # P 1/1, R 1/3


def test_report_intervals_resample_instances_and_contain_the_estimate():
    matches = [ChecklistMatch([1.0, 0.5], [1.0, 0.0, 0.5]), ChecklistMatch([0.0], [0.5]),
               ChecklistMatch([1.0, 1.0], [1.0, 1.0]), ChecklistMatch([0.5, 0.0, 0.0], [0.0, 0.0])]
    report = match_report(matches, failed=1, seed=3)
    precision, recall, f1 = micro_scores(matches)
    assert report.precision.mean == pytest.approx(precision)
    assert report.recall.mean == pytest.approx(recall)
    assert report.f1.mean == pytest.approx(f1)
    assert report.mean_f1.mean == pytest.approx(sum(m.f1 for m in matches) / 4)
    for estimate in (report.precision, report.recall, report.f1, report.mean_precision, report.mean_f1):
        assert estimate.low <= estimate.mean <= estimate.high
        assert estimate.low < estimate.high
    assert report.instances == 4 and report.failed == 1
    metrics = report.as_metrics("all_")
    assert metrics["all_f1"] == pytest.approx(f1) and metrics["all_failed"] == 1.0


def test_f1_interval_is_deterministic_per_seed_and_absent_for_one_instance():
    matches = [ChecklistMatch([1.0], [0.5]), ChecklistMatch([0.0, 1.0], [1.0]), ChecklistMatch([0.5], [0.0])]
    assert micro_f1_estimate(matches, seed=1) == micro_f1_estimate(matches, seed=1)
    single = micro_f1_estimate(matches[:1])
    assert single.mean == pytest.approx(2 * 1.0 * 0.5 / 1.5) and math.isnan(single.low)
    assert math.isnan(micro_f1_estimate([]).mean)
