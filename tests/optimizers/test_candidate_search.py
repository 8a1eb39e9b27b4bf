import random
import threading
import time

import dspy
import pytest

from prefcraft.optimizers.candidate_search import (
    CandidateScore,
    ExactRace,
    out_of_the_running,
    paper_winner,
    search_candidates,
)


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


def test_the_default_is_the_papers_winner_without_the_calls_that_cannot_change_it():
    # Candidate 1 is sure of 0.75 after six right answers: the later candidate is not needed (the winner itself is
    # scored to the end, for its accuracy).
    candidates = [Scripted({0, 1, 2, 3}), Scripted(set(range(8))), Scripted(set(range(8)))]
    result = search_candidates(candidates, EXAMPLES, metric, stop_at=0.75, num_threads=1)
    assert result.best_index == 1 == search(candidates, "exhaustive", stop_at=0.75).best_index
    assert [score.judged for score in result.scores] == [8, 8, 0]
    assert [score.stopped for score in result.scores] == ["complete", "complete", "not needed"]
    assert result.best.accuracy == 1.0


def test_exact_stops_a_candidate_that_can_no_longer_beat_an_earlier_complete_one():
    # Candidate 0 ends with 4 of 8; candidate 1, wrong on its first four, can at best tie it, and ties go to the
    # earlier one. Candidate 2 beats it.
    candidates = [Scripted({0, 1, 2, 3}), Scripted({0, 1}), Scripted({3, 4, 5, 6, 7})]
    result = search_candidates(candidates, EXAMPLES, metric, stop_at=None, num_threads=1)
    assert result.best_index == 2 == search(candidates, "exhaustive").best_index
    judged = [score.judged for score in result.scores]
    assert judged == [8, 4, 8]
    assert result.scores[1].stopped == "cannot win"
    assert result.judged < 24


def test_exact_asks_each_candidate_first_where_it_is_likely_wrong():
    # Candidate 0 is wrong on 4-7: candidate 1 is asked those first and is out after four wrong answers.
    first, second = Scripted({0, 1, 2, 3}), Scripted({0, 1, 2, 3})
    assert search_candidates([first, second], EXAMPLES, metric, stop_at=None, num_threads=1).best_index == 0
    assert second.asked == [4, 5, 6, 7]
    # One that disagrees with candidate 0 (a judge biased to the other position) is asked where candidate 0 was right
    # once its first answers show it: 5 calls, where "the examples the others got wrong first" would take all 8.
    first, opposite = Scripted({0, 1, 2, 3}), Scripted({4, 5, 6, 7})
    assert search_candidates([first, opposite], EXAMPLES, metric, stop_at=None, num_threads=1).best_index == 0
    assert opposite.asked == [4, 0, 1, 2, 3]


def test_a_candidate_sure_of_the_threshold_waits_for_the_earlier_ones():
    # Candidate 1 is sure of 0.75 early, but candidate 0 can still reach it until its third wrong answer.
    candidates = [Scripted({0, 1, 2, 3, 4}), Scripted(set(range(8)))]
    for threads in (1, 2, 4):
        result = search_candidates(candidates, EXAMPLES, metric, stop_at=0.75, num_threads=threads)
        assert result.best_index == 1
        assert result.scores[0].judged >= 3


def test_one_candidate_and_no_examples():
    only = Scripted({0, 1})
    result = search_candidates([only], EXAMPLES, metric, stop_at=0.8, num_threads=4)
    assert result.best_index == 0 and result.best.complete and result.best.correct == 2  # scored, for its accuracy
    empty = search_candidates([Scripted(set()), Scripted(set())], [], metric, stop_at=0.8, num_threads=4)
    assert empty.best_index == 0 and empty.judged == 0


def test_exact_needs_a_metric_between_zero_and_one():
    with pytest.raises(ValueError, match="between 0 and 1"):
        search_candidates([Scripted(set())], EXAMPLES, lambda example, prediction: 2.0, stop_at=None, num_threads=2)


def test_exact_sends_a_candidates_first_call_alone_and_keeps_the_threads_busy():
    lock, in_flight, early = threading.Lock(), [], []

    class Watched(Scripted):
        def __init__(self, correct_for):
            super().__init__(correct_for)
            self.started, self.finished = 0, 0

        def forward(self, index):
            with lock:
                early.append(self.started > 0 and self.finished == 0)  # a second call before the first returned
                self.started += 1
                in_flight.append(sum(c.started - c.finished for c in candidates))
            time.sleep(0.01)
            prediction = super().forward(index)
            with lock:
                self.finished += 1
            return prediction

    candidates = [Watched({0, 1, 2}) for _ in range(6)]
    search_candidates(candidates, EXAMPLES, metric, stop_at=None, num_threads=3)
    assert not any(early)
    assert max(in_flight) == 3


def outcome_table(rng: random.Random) -> list[list[float | None]]:
    """Per (candidate, example): right (1), wrong (0) or a failed call (None); candidates of every strength."""
    candidates, examples = rng.choice([1, 1, 2, 3, 5, 8, 13]), rng.choice([0, 1, 2, 3, 4, 8, 8, 10])
    fail = rng.choice([0.0, 0.0, 0.1, 0.3])
    table = []
    for _ in range(candidates):
        strength = rng.choice([0.0, 0.3, 0.5, 0.5, 0.7, 0.8, 0.9, 1.0])
        table.append([None if rng.random() < fail else float(rng.random() < strength) for _ in range(examples)])
    return table


class FromTable(dspy.Module):
    """A candidate without an LM: its row of an outcome table; None raises, as a failed call does."""

    def __init__(self, row: list[float | None]):
        super().__init__()
        self.row = row

    def forward(self, index: int) -> dspy.Prediction:
        if self.row[index] is None:
            raise RuntimeError("failed call")
        return dspy.Prediction(answer=self.row[index])


def table_metric(example, prediction, trace=None):
    return prediction.answer


def race_on_table(table: list[list[float | None]], stop_at: float | None, threads: int,
                  rng: random.Random) -> tuple[int, list[CandidateScore]]:
    """`exact`'s race on a plain table, its calls answered in a random order: any order threads may give."""
    scores = [CandidateScore(index, 0.0, 0, len(row)) for index, row in enumerate(table)]
    race, sent = ExactRace(scores, stop_at), []
    while True:
        while len(sent) < threads and (call := race.next_call()) is not None:
            sent.append(call)
        if not sent:
            return race.winner(), scores
        score, example = sent.pop(rng.randrange(len(sent)))
        race.record(score, example, table[score.index][example])


def test_exact_always_picks_the_exhaustive_searchs_winner_on_random_tables():
    """The property: over many random outcome tables (ties, failed calls, one example or none, one candidate, none or
    several reaching the threshold), `exact` picks the candidate `exhaustive` picks, with that candidate's full score,
    in as many calls or fewer; partial candidates say why they stopped. Each table runs through the threaded search
    and through the race alone with its results coming back in a random order."""
    rng = random.Random(41)
    calls = {"exact": 0, "race": 0, "exhaustive": 0}
    for _ in range(1000):
        table = outcome_table(rng)
        examples = [dspy.Example(index=i).with_inputs("index") for i in range(len(table[0]))]
        stop_at = rng.choice([None, 0.5, 0.75, 0.8, 1.0])
        threads = rng.choice([1, 2, 4, 8])
        exact, exhaustive = (search_candidates([FromTable(row) for row in table], examples, table_metric,
                                               stop_at=stop_at, num_threads=threads, strategy=strategy)
                             for strategy in ("exact", "exhaustive"))
        race_winner, race_scores = race_on_table(table, stop_at, threads, rng)
        case = f"table {table}, stop_at {stop_at}, {threads} threads"
        assert exhaustive.best_index == paper_winner(
            [CandidateScore(i, sum(v or 0.0 for v in row), len(row), len(row)) for i, row in enumerate(table)],
            stop_at)
        assert exact.best_index == race_winner == exhaustive.best_index, case
        for scores in (exact.scores, race_scores):
            assert scores[exhaustive.best_index].complete, case
            assert scores[exhaustive.best_index].correct == exhaustive.best.correct, case
            for score in scores:
                assert (score.stopped == "complete") == score.complete, case
                assert score.stopped in ("complete", "cannot win", "not needed"), case
        assert exact.judged <= exhaustive.judged, case
        calls["exact"] += exact.judged
        calls["race"] += sum(score.judged for score in race_scores)
        calls["exhaustive"] += exhaustive.judged
    assert calls["exact"] < 0.7 * calls["exhaustive"] and calls["race"] < 0.7 * calls["exhaustive"]


def test_out_of_the_running_on_plain_scores():
    def scores(*rows):  # (correct, judged) per candidate, 8 examples each
        return [CandidateScore(i, correct, judged, 8) for i, (correct, judged) in enumerate(rows)]

    # 7 of 8 is sure of 0.8: later candidates are not needed, earlier ones that cannot reach it cannot win.
    assert out_of_the_running(scores((0, 2), (1, 1), (7, 7), (0, 0)), 0.8) == {0: "cannot win", 3: "not needed"}
    # Nobody sure: candidate 1 (at most 5) ties the complete candidate 0 (5): ties go to the earlier one.
    assert out_of_the_running(scores((5, 8), (2, 5), (2, 4)), None) == {1: "cannot win"}
    # An earlier candidate is out only if a later one's score so far beats its best strictly.
    assert out_of_the_running(scores((2, 5), (5, 8)), None) == {}
    assert out_of_the_running(scores((1, 5), (5, 8)), None) == {0: "cannot win"}
    # A candidate that can still reach the threshold stays in, whatever the others' scores so far; once it cannot,
    # they count.
    assert out_of_the_running(scores((6, 7), (0, 1)), 0.85) == {}
    assert out_of_the_running(scores((6, 7), (0, 2)), 0.85) == {1: "cannot win"}
    # Both can still win: candidate 1 if it reaches 0.75, candidate 0 if it does not.
    assert out_of_the_running(scores((5, 8), (1, 2)), 0.75) == {}


def test_needs_a_candidate():
    for strategy in ("exact", "exhaustive", "halving"):
        with pytest.raises(ValueError, match="at least one candidate"):
            search([], strategy)
