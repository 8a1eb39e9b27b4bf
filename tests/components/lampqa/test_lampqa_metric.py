"""LaMP-QA's aspect score against hand-computed cases, and its aggregates."""

import math

import pytest

from prefcraft.components.lampqa.metrics import QuestionResult, method_report, question_score, relative_gain


def test_question_score_is_the_sum_over_twice_the_aspects():
    assert question_score([2, 2, 2]) == 1.0
    assert question_score([0, 0, 0, 0]) == 0.0
    assert question_score([2, 1, 0]) == pytest.approx(3 / 6)
    assert question_score([1, 1, 2, 0, 2]) == pytest.approx(6 / 10)


def test_a_failed_judgment_counts_as_zero_and_no_aspects_is_an_error():
    assert question_score([2, None]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="at least one aspect"):
        question_score([])


def test_method_report_means_by_category_then_over_categories_and_counts_failures():
    results = [
        QuestionResult("a", "Arts", (2, 2)),  # 1.0
        QuestionResult("b", "Arts", (1, 0, None)),  # 1/6
        QuestionResult("c", "Society", (2, 1, 1, 0)),  # 0.5
        QuestionResult("d", "Society", (), answer_failure="context_window_exceeded: too long"),  # 0
    ]
    report = method_report(results)
    assert report.by_category["Arts"].mean == pytest.approx((1 + 1 / 6) / 2)
    assert report.by_category["Society"].mean == pytest.approx(0.25)
    assert report.overall.mean == pytest.approx(((1 + 1 / 6) / 2 + 0.25) / 2)
    assert report.pooled.mean == pytest.approx((1 + 1 / 6 + 0.5 + 0) / 4)
    assert report.overall.n == 4 and report.overall.low <= report.overall.mean <= report.overall.high
    assert (report.failed_answers, report.failed_judgments) == (1, 1)
    metrics = report.as_metrics("m_")
    assert metrics["m_score_Society"] == pytest.approx(0.25) and metrics["m_score"] == report.overall.mean
    assert metrics["m_score_pooled"] == report.pooled.mean


def test_unequal_category_sizes_weigh_each_category_the_same():
    # Arts: one question scoring 1.0; Society: three scoring 0. Macro (1 + 0) / 2 = 0.5; pooled 1/4.
    results = [QuestionResult("a", "Arts", (2,)), *(QuestionResult(f"s{i}", "Society", (0, 0)) for i in range(3))]
    report = method_report(results)
    assert report.overall.mean == pytest.approx(0.5) and report.pooled.mean == pytest.approx(0.25)
    # Every resample keeps both categories and each is constant, so the macro interval is the point itself.
    assert report.overall.low == pytest.approx(0.5) and report.overall.high == pytest.approx(0.5)


def test_the_macro_interval_resamples_within_categories():
    arts = [QuestionResult(f"a{i}", "Arts", (score,)) for i, score in enumerate((0, 1, 2, 2))]
    society = [QuestionResult(f"s{i}", "Society", (score,)) for i, score in enumerate((0, 2))]
    report = method_report([*arts, *society])
    assert report.overall.mean == pytest.approx((5 / 8 + 1 / 2) / 2)
    assert report.overall.low < report.overall.mean < report.overall.high
    assert 0.0 <= report.overall.low and report.overall.high <= 1.0
    one_each = method_report([arts[3], society[0]])
    assert one_each.overall.mean == pytest.approx(0.5) and math.isnan(one_each.overall.low)


def test_relative_gain_over_the_baseline():
    assert relative_gain(0.4566, 0.3270) == pytest.approx(0.3963, abs=1e-4)  # Gemma 2, PlanPers vs baseline (Table 2)
    assert math.isnan(relative_gain(0.5, 0.0))
