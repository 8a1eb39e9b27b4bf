"""LaMP-QA's aspect score against hand-computed cases, and its aggregates."""

import math

import pytest

from prefcraft.metrics.lampqa import QuestionResult, method_report, question_score, relative_gain


def test_question_score_is_the_sum_over_twice_the_aspects():
    assert question_score([2, 2, 2]) == 1.0
    assert question_score([0, 0, 0, 0]) == 0.0
    assert question_score([2, 1, 0]) == pytest.approx(3 / 6)
    assert question_score([1, 1, 2, 0, 2]) == pytest.approx(6 / 10)


def test_a_failed_judgment_counts_as_zero_and_no_aspects_is_an_error():
    assert question_score([2, None]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="at least one aspect"):
        question_score([])


def test_method_report_means_by_question_and_category_and_counts_failures():
    results = [
        QuestionResult("a", "Arts", (2, 2)),  # 1.0
        QuestionResult("b", "Arts", (1, 0, None)),  # 1/6
        QuestionResult("c", "Society", (2, 1, 1, 0)),  # 0.5
        QuestionResult("d", "Society", (), answer_failed=True),  # 0
    ]
    report = method_report(results)
    assert report.overall.mean == pytest.approx((1 + 1 / 6 + 0.5 + 0) / 4)
    assert report.overall.n == 4 and report.overall.low <= report.overall.mean <= report.overall.high
    assert report.by_category["Arts"].mean == pytest.approx((1 + 1 / 6) / 2)
    assert report.by_category["Society"].mean == pytest.approx(0.25)
    assert (report.failed_answers, report.failed_judgments) == (1, 1)
    assert report.as_metrics("m_")["m_score_Society"] == pytest.approx(0.25)


def test_relative_gain_over_the_baseline():
    assert relative_gain(0.4538, 0.3270) == pytest.approx(0.3878, abs=1e-4)  # Gemma 2 PlanPers vs none, Table 2
    assert math.isnan(relative_gain(0.5, 0.0))
