"""CUPID's preference-match and response scores against hand-computed cases, failures counted as the reference does."""

import math

import pytest

from prefcraft.components.cupid.metrics import (
    judge_score,
    match_report,
    micro_f1_estimate,
    micro_scores,
    response_scores,
)
from prefcraft.programs.cupid import ChecklistMatch


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
    report = match_report(matches, inference_failures=1, matcher_failures=2, seed=3)
    precision, recall, f1 = micro_scores(matches)
    assert report.precision.mean == pytest.approx(precision)
    assert report.recall.mean == pytest.approx(recall)
    assert report.f1.mean == pytest.approx(f1)
    assert report.mean_f1.mean == pytest.approx(sum(m.f1 for m in matches) / 4)
    for estimate in (report.precision, report.recall, report.f1, report.mean_precision, report.mean_f1):
        assert estimate.low <= estimate.mean <= estimate.high
        assert estimate.low < estimate.high
    assert (report.instances, report.inference_failures, report.matcher_failures) == (4, 1, 2)
    metrics = report.as_metrics("all_")
    assert metrics["all_f1"] == pytest.approx(f1) and metrics["all_inference_failures"] == 1.0
    assert metrics["all_matcher_failures"] == 2.0


def test_f1_interval_is_deterministic_per_seed_and_absent_for_one_instance():
    matches = [ChecklistMatch([1.0], [0.5]), ChecklistMatch([0.0, 1.0], [1.0]), ChecklistMatch([0.5], [0.0])]
    assert micro_f1_estimate(matches, seed=1) == micro_f1_estimate(matches, seed=1)
    single = micro_f1_estimate(matches[:1])
    assert single.mean == pytest.approx(2 * 1.0 * 0.5 / 1.5) and math.isnan(single.low)
    assert math.isnan(micro_f1_estimate([]).mean)


def test_a_failed_matcher_keeps_the_inferred_items_in_the_precision_denominator():
    # Scored: 2.5 of 4 and 1 of 2 inferred items covered. A third instance's matcher failed on 3 inferred items:
    # the reference keeps them (P = 3.5 / 9 = 0.39); dropping them would give 3.5 / 6 = 0.58.
    scored = [ChecklistMatch([1.0, 1.0, 0.5, 0.0], [1.0, 0.5]), ChecklistMatch([1.0, 0.0], [0.0, 1.0])]
    failed = ChecklistMatch.unmatched(inferred_items=3, gold_items=2)
    assert failed.predicted_coverage == [0.0] * 3 and failed.true_coverage == [0.0] * 2
    precision, recall, _ = micro_scores([*scored, failed])
    assert precision == pytest.approx(3.5 / 9) and recall == pytest.approx(2.5 / 6)
    assert micro_scores(scored)[0] == pytest.approx(3.5 / 6)


def test_the_judge_score_is_read_as_the_reference_reads_it():
    assert judge_score("8.5") == 8.0  # truncated at the point, not rounded
    assert judge_score("7/10") == 7.0 and judge_score("**9**") == 9.0 and judge_score(" 10 ") == 10.0
    assert judge_score("6\n\nThe response is fine") == 6.0
    assert judge_score(7) == 7.0
    assert judge_score("eight") is None and judge_score("") is None and judge_score("Score: 8") is None


def test_unparseable_and_failed_judgments_score_zero_and_are_counted():
    scores = response_scores([8.0, None, 6.0], judge_failures=1, generation_failures=2)
    assert scores.score.mean == pytest.approx((8 + 0 + 6 + 0) / 4) and scores.score.n == 4
    assert (scores.judge_failures, scores.unparseable, scores.generation_failures) == (1, 1, 2)
    assert math.isnan(response_scores([], generation_failures=1).score.mean)


def test_response_metrics_carry_the_score_its_interval_and_each_failure_count():
    metrics = response_scores([8.0, None, 6.0], judge_failures=1, generation_failures=2).as_metrics("contrastive_")
    assert metrics["contrastive_score"] == pytest.approx(3.5) and metrics["contrastive_responses"] == 4.0
    assert metrics["contrastive_score_low"] <= 3.5 <= metrics["contrastive_score_high"]
    assert (metrics["contrastive_judge_failures"], metrics["contrastive_unparseable_scores"],
            metrics["contrastive_generation_failures"]) == (1.0, 1.0, 2.0)
    assert set(response_scores([], generation_failures=1).as_metrics()) == {  # no score where none was judged
        "responses", "judge_failures", "unparseable_scores", "generation_failures", "context_overflows"}
