import dspy
import pytest

from prefcraft.optimizers.candidate_search import search_candidates


class Scripted(dspy.Module):
    """A program without an LM: it answers `correct_for` inputs correctly and records what it was asked."""

    def __init__(self, correct_for: set[int]):
        super().__init__()
        self.correct_for = correct_for
        self.asked: list[int] = []

    def forward(self, index: int) -> dspy.Prediction:
        self.asked.append(index)
        return dspy.Prediction(answer="yes" if index in self.correct_for else "no")


def metric(example, prediction, trace=None):
    return prediction.answer == "yes"


EXAMPLES = [dspy.Example(index=i).with_inputs("index") for i in range(8)]


def search(candidates, strategy, stop_at=None):
    return search_candidates(candidates, EXAMPLES, metric, stop_at=stop_at, num_threads=2, strategy=strategy,
                             first_rung=2)


def test_exhaustive_scores_everything_and_keeps_the_earlier_candidate_on_ties_like_the_reference():
    candidates = [Scripted({0, 1}), Scripted({0, 1, 2, 3, 4}), Scripted({3, 4, 5, 6, 7})]
    result = search(candidates, "exhaustive")
    assert result.best_index == 1
    assert result.best.accuracy == pytest.approx(5 / 8)
    assert all(sorted(candidate.asked) == list(range(8)) for candidate in candidates)


def test_exhaustive_takes_the_first_candidate_reaching_the_threshold_like_the_reference():
    good_enough, better = Scripted(set(range(7))), Scripted(set(range(8)))
    result = search([Scripted(set()), good_enough, better], "exhaustive", stop_at=0.8)
    assert result.best_index == 1
    assert result.judged == 24


def test_halving_keeps_the_best_third_on_rungs_that_double():
    # 7 candidates: rung 1 (examples 0-1) all, the best 3 go on to rung 2 (2-5), the best 1 to rung 3 (6-7).
    candidates = [Scripted(set()) for _ in range(4)] + [Scripted(set(range(8))), Scripted({0, 1}), Scripted({0, 2})]
    result = search(candidates, "halving")
    assert result.best_index == 4
    assert result.best.complete and result.best.accuracy == 1.0
    assert [len(candidate.asked) for candidate in candidates] == [2, 2, 2, 2, 8, 6, 6]
    assert result.judged == 7 * 2 + 3 * 4 + 2
    assert [score.complete for score in result.scores] == [False, False, False, False, True, False, False]


def test_halving_stops_at_a_candidate_whose_score_already_guarantees_the_threshold():
    sure, also_sure = Scripted(set(range(8))), Scripted(set(range(8)))
    others = [Scripted({0}) for _ in range(5)]
    result = search([sure, also_sure, *others], "halving", stop_at=0.75)
    # After rungs 1 and 2 (6 examples) `sure` has 6/8 whatever follows: only it is scored on the last rung.
    assert result.best_index == 0
    assert len(sure.asked) == 8 and len(also_sure.asked) == 6


def test_halving_can_drop_a_candidate_that_only_shines_late():
    late = Scripted(set(range(2, 8)))
    result = search([Scripted({0, 1}), Scripted({0, 1}), Scripted({0, 1}), late], "halving")
    assert result.best_index != 3
    assert search([Scripted({0, 1}), late], "exhaustive").best_index == 1


def test_a_failed_call_scores_zero():
    class Failing(Scripted):
        def forward(self, index: int) -> dspy.Prediction:
            if index == 0:
                raise RuntimeError("server hiccup")
            return super().forward(index)

    result = search([Failing(set(range(8)))], "exhaustive")
    assert result.best.correct == 7
    assert result.best.failed == result.failed == 1


def test_halving_breaks_ties_by_a_seeded_random_order_not_by_position():
    # Ten candidates tie on the first rung; keeping the earlier ones would always keep candidates 0-3.
    def survivors(seed):
        candidates = [Scripted(set(range(8))) for _ in range(10)]
        search_candidates(candidates, EXAMPLES, metric, stop_at=None, num_threads=2, strategy="halving",
                          first_rung=2, seed=seed)
        return {index for index, candidate in enumerate(candidates) if len(candidate.asked) > 2}

    assert len(survivors(0)) == 4
    assert survivors(0) == survivors(0)
    assert any(survivors(seed) != {0, 1, 2, 3} for seed in range(5))
    assert len(set.union(*(survivors(seed) for seed in range(5)))) > 4


def test_calls_in_flight_together_belong_to_different_candidates():
    order: list[tuple[int, int]] = []

    class Recording(Scripted):
        def __init__(self, name):
            super().__init__(set(range(8)))
            self.name = name

        def forward(self, index):
            order.append((self.name, index))
            return super().forward(index)

    candidates = [Recording(name) for name in range(3)]
    search_candidates(candidates, EXAMPLES, metric, stop_at=None, num_threads=1, strategy="exhaustive")
    # The first call of each candidate, then one call of each in turn.
    assert order[:3] == [(0, 0), (1, 0), (2, 0)]
    assert order[3:6] == [(0, 1), (1, 1), (2, 1)]


def test_the_default_scores_every_candidate_on_every_example_as_the_paper():
    candidates = [Scripted(set(range(8))) for _ in range(3)]
    result = search_candidates(candidates, EXAMPLES, metric, stop_at=None, num_threads=2)
    assert all(len(candidate.asked) == len(EXAMPLES) for candidate in candidates)
    assert result.best_index == 0


def test_needs_a_candidate():
    with pytest.raises(ValueError, match="at least one candidate"):
        search([], "halving")
