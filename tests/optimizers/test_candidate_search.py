import dspy
import pytest

from optimizers.candidate_search import search_candidates


class Scripted(dspy.Module):
    """A program without an LM: it answers `correct_for` inputs correctly and counts its calls."""

    def __init__(self, correct_for: set[int]):
        super().__init__()
        self.correct_for = correct_for
        self.calls = 0

    def forward(self, index: int) -> dspy.Prediction:
        self.calls += 1
        return dspy.Prediction(answer="yes" if index in self.correct_for else "no")


def metric(example, prediction, trace=None):
    return prediction.answer == "yes"


EXAMPLES = [dspy.Example(index=i).with_inputs("index") for i in range(8)]


def test_picks_the_most_accurate_candidate_and_keeps_the_earlier_on_ties():
    candidates = [Scripted({0, 1}), Scripted({0, 1, 2, 3, 4}), Scripted({3, 4, 5, 6, 7})]
    result = search_candidates(candidates, EXAMPLES, metric, stop_at=None, num_threads=1)
    assert result.best_index == 1
    assert result.best.accuracy == pytest.approx(5 / 8)


def test_abandons_a_candidate_that_can_no_longer_win():
    leader, hopeless = Scripted(set(range(8))), Scripted(set())
    result = search_candidates([leader, hopeless], EXAMPLES, metric, stop_at=None, num_threads=1)
    assert result.best_index == 0
    assert hopeless.calls == 2  # one batch of 2 * num_threads examples, then it cannot catch up
    assert not result.scores[1].complete


def test_stops_at_the_first_candidate_reaching_the_threshold():
    good_enough, better, never_run = Scripted(set(range(7))), Scripted(set(range(8))), Scripted(set(range(8)))
    result = search_candidates([good_enough, better, never_run], EXAMPLES, metric, stop_at=0.8, num_threads=2)
    assert result.best_index == 0
    assert better.calls == never_run.calls == 0
    assert len(result.scores) == 1


def test_needs_a_candidate():
    with pytest.raises(ValueError, match="at least one candidate"):
        search_candidates([], EXAMPLES, metric, stop_at=None, num_threads=1)
