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
