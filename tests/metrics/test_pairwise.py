import dspy
import pytest

from prefcraft.metrics.pairwise import Judgment, pairwise_report, preference_correct


def judgments_for(user, pair, first_pick, second_pick):
    """first_pick/second_pick: what the judge said when the chosen response was shown first/second."""
    return [
        Judgment(user, pair, "chosen_first", first_pick, first_pick == "First"),
        Judgment(user, pair, "chosen_second", second_pick, second_pick == "Second"),
    ]


def test_metric_compares_the_predicted_position():
    example = dspy.Example(preference="Second")
    assert preference_correct(example, dspy.Prediction(preference="Second"))
    assert not preference_correct(example, dspy.Prediction(preference="First"))
    assert not preference_correct(example, dspy.Prediction())  # unparseable output is wrong


def test_position_biased_judge_scores_half_per_judgment_and_zero_per_pair():
    judgments = judgments_for("u1", "p1", "First", "First") + judgments_for("u1", "p2", "First", "First")
    report = pairwise_report(judgments)
    assert report.accuracy.mean == pytest.approx(0.5)
    assert report.chosen_first.mean == 1.0
    assert report.chosen_second.mean == 0.0
    assert report.pair_accuracy.mean == 0.0  # a tie in every pair
    assert report.consistency == 0.0


def test_per_user_accuracy_and_parse_failures():
    judgments = judgments_for("alice", "p1", "First", "Second") + judgments_for("bob", "p2", None, "First")
    report = pairwise_report(judgments)
    assert report.per_user["alice"].mean == 1.0
    assert report.per_user["bob"].mean == 0.0
    assert report.parse_failures == 1
    assert report.pair_accuracy.mean == 0.5
    assert report.as_metrics("x_")["x_accuracy"] == 0.5


def test_consistency_compares_winners_and_leaves_out_unparseable_pairs():
    judgments = (
        judgments_for("u1", "both_unparseable", None, None)
        + judgments_for("u1", "one_unparseable", None, "First")
        + judgments_for("u1", "chosen_wins_twice", "First", "Second")
        + judgments_for("u1", "rejected_wins_twice", "Second", "First")
        + judgments_for("u1", "position_bias", "First", "First")
    )
    report = pairwise_report(judgments)
    assert report.consistency == pytest.approx(2 / 3)
    assert report.consistency_left_out == 2
    metrics = report.as_metrics()
    assert metrics["consistency"] == pytest.approx(2 / 3)
    assert metrics["consistency_left_out"] == 2.0


def test_without_parsed_pairs_consistency_is_not_reported():
    report = pairwise_report(judgments_for("u1", "p1", None, None))
    assert report.consistency_left_out == 1
    assert "consistency" not in report.as_metrics()


def test_accuracy_interval_resamples_pairs_and_keeps_the_per_judgment_interval_beside_it():
    # Both orders of a pair are right or both wrong: 20 judgments, but only 10 independent pairs.
    judgments = [
        judgment
        for index in range(10)
        for judgment in judgments_for("u1", f"p{index}", *(("First", "Second") if index % 2 else ("Second", "First")))
    ]
    report = pairwise_report(judgments)
    per_pair, per_judgment = report.accuracy, report.accuracy_per_judgment_ci
    assert per_pair.mean == per_judgment.mean == 0.5
    assert per_pair.n == per_judgment.n == 20
    assert (per_pair.high - per_pair.low) > (per_judgment.high - per_judgment.low)
    metrics = report.as_metrics("x_")
    assert (metrics["x_accuracy_ci_low"], metrics["x_accuracy_ci_high"]) == (per_pair.low, per_pair.high)
    assert metrics["x_accuracy_per_judgment_ci_low"] == per_judgment.low
    assert metrics["x_accuracy_per_judgment_ci_high"] == per_judgment.high


def test_per_user_intervals_resample_the_users_pairs():
    judgments = [
        judgment
        for index in range(10)
        for judgment in judgments_for("u1", f"p{index}", *(("First", "Second") if index % 2 else ("Second", "First")))
    ]
    report = pairwise_report(judgments)
    assert report.per_user["u1"] == report.accuracy != report.accuracy_per_judgment_ci


def test_unparseable_judgments_count_wrong_as_in_the_paper_and_half_beside_it():
    judgments = (
        judgments_for("u1", "both_right", "First", "Second")
        + judgments_for("u1", "unparseable_then_wrong", None, "First")
        + judgments_for("u1", "wrong_then_unparseable", "Second", None)
    )
    # The reference's evaluate by hand: chosen shown first +1, 0, -1; shown second (negated) +1, -1, 0.
    # Clipped at 0 (the paper's table): 1, 0, 0, 1, 0, 0 -> 2/6. Unclipped mean 0, read as (0 + 1) / 2 -> 1/2.
    report = pairwise_report(judgments)
    assert report.accuracy.mean == pytest.approx(2 / 6)
    assert report.accuracy_unparseable_half == pytest.approx(3 / 6)
    assert report.parse_failures == 2
    metrics = report.as_metrics("x_")
    assert metrics["x_accuracy"] == pytest.approx(1 / 3)
    assert metrics["x_accuracy_unparseable_half"] == pytest.approx(1 / 2)


def test_without_unparseable_judgments_both_rules_agree():
    judgments = judgments_for("u1", "p1", "First", "First") + judgments_for("u1", "p2", "Second", "Second")
    report = pairwise_report(judgments)
    assert report.accuracy.mean == report.accuracy_unparseable_half == 0.5
