import itertools
import random

import dspy
import pytest

from prefcraft.metrics.majority_vote import encode_votes
from prefcraft.optimizers.sensejudge import (
    SubsetSelection,
    SubsetSelectionConfig,
    search_subsets,
    subset_accuracy,
)
from prefcraft.programs.sensejudge import SelectedJudge


def brute_force(votes: list[list[str | None]], gold: list[str], penalize: bool = False):
    """The reference's scoring, written out: every subset, majority of cast votes, ties to the first response."""
    scored = []
    for size in range(1, len(votes) + 1):
        for subset in itertools.combinations(range(len(votes)), size):
            right = {"First": 0, "Second": 0}
            for judgment, label in enumerate(gold):
                cast = [votes[d][judgment] for d in subset if votes[d][judgment] is not None]
                firsts = sum(vote == "First" for vote in cast)
                decision = None if not cast else "First" if 2 * firsts >= len(cast) else "Second"
                right[label] += decision == label
            score = right["First"] + right["Second"] - (abs(right["First"] - right["Second"]) if penalize else 0)
            scored.append((subset, score))
    best = max(score for _, score in scored)
    return [subset for subset, score in scored if score == best], best


def random_votes(rng: random.Random, descriptions: int, judgments: int):
    votes = [[rng.choice(["First", "Second", "First", "Second", None]) for _ in range(judgments)]
             for _ in range(descriptions)]
    gold = [rng.choice(["First", "Second"]) for _ in range(judgments)]
    return votes, gold


@pytest.mark.parametrize("penalize", [False, True])
def test_exhaustive_search_matches_brute_force_on_hand_made_votes(penalize):
    rng = random.Random(7)
    for _ in range(40):
        votes, gold = random_votes(rng, rng.randint(1, 7), rng.randint(2, 12))
        search = search_subsets(encode_votes(votes), encode_votes([gold])[0], penalize_order_imbalance=penalize)
        tied, best = brute_force(votes, gold, penalize)
        assert search.strategy == "exhaustive"
        assert search.tied_best == tied
        assert search.score == best
        assert search.best == tied[0]


def test_ties_pick_the_smallest_then_lowest_subset_and_record_every_tied_one():
    votes = [["First", "Second"], ["First", "Second"], ["Second", "First"]]
    search = search_subsets(encode_votes(votes), encode_votes([["First", "Second"]])[0])
    assert search.best == (0,)
    # (0, 2) and (1, 2) split their votes on both judgments; the split goes to the first response: right once.
    assert search.tied_best == [(0,), (1,), (0, 1), (0, 1, 2)]
    assert search.correct == 2


def test_twelve_descriptions_are_searched_exhaustively_and_thirteen_by_beam():
    rng = random.Random(3)
    votes, gold = random_votes(rng, 13, 10)
    assert search_subsets(encode_votes(votes[:12]), encode_votes([gold])[0]).subsets_scored == 4095
    beam = search_subsets(encode_votes(votes), encode_votes([gold])[0], beam_width=8)
    assert beam.strategy == "beam" and beam.subsets_scored < 2**13 - 1
    tied, best = brute_force(votes, gold)
    assert beam.score <= best
    assert all(subset in tied for subset in beam.tied_best)


def test_a_beam_as_wide_as_every_subset_finds_the_exhaustive_answer():
    rng = random.Random(5)
    votes, gold = random_votes(rng, 6, 9)
    wide = search_subsets(encode_votes(votes), encode_votes([gold])[0], exhaustive_limit=0, beam_width=64)
    assert wide.tied_best == brute_force(votes, gold)[0]


def test_subset_accuracy_averages_over_every_judgment():
    votes = encode_votes([["First", "First", None, "Second"]])
    gold = encode_votes([["First", "Second", "First", "Second"]])[0]
    assert subset_accuracy(votes, gold, [(0,)]).tolist() == [0.5]


class Scripted(dspy.Module):
    """A judge without an LM: answers from a table keyed by the first completion, and counts its calls."""

    def __init__(self, answers: dict[str, str | None]):
        super().__init__()
        self.answers = answers
        self.calls = 0

    def forward(self, conversation, first_completion, second_completion):
        self.calls += 1
        answer = self.answers[first_completion]
        if answer is None:
            raise RuntimeError("server hiccup")
        return dspy.Prediction(preference=answer)


def examples(count: int) -> list[dspy.Example]:
    """`count` pairs in both orders; the chosen response is `c<i>`."""
    made = []
    for i in range(count):
        shared = {"conversation": f"q{i}"}
        made.append(dspy.Example(**shared, first_completion=f"c{i}", second_completion=f"r{i}", preference="First")
                    .with_inputs("conversation", "first_completion", "second_completion"))
        made.append(dspy.Example(**shared, first_completion=f"r{i}", second_completion=f"c{i}", preference="Second")
                    .with_inputs("conversation", "first_completion", "second_completion"))
    return made


def judge_of(right: set[str], failing: frozenset[str] = frozenset()) -> Scripted:
    """Right on the pairs whose chosen response is in `right`, in both orders; wrong on the others."""
    answers = {}
    for i in range(4):
        chosen, rejected = f"c{i}", f"r{i}"
        answers[chosen] = "First" if chosen in right else "Second"
        answers[rejected] = "Second" if chosen in right else "First"
    return Scripted({key: None if key in failing else value for key, value in answers.items()})


def student_of(judges: list[Scripted]) -> SelectedJudge:
    student = SelectedJudge()
    student.judges = judges
    return student


def test_compile_selects_on_the_votes_and_returns_a_new_program():
    judges = [judge_of({"c0", "c1"}), judge_of({"c0", "c2", "c3"}), judge_of({"c1", "c2", "c3"}),
              judge_of({"c0", "c1", "c3"})]
    student = student_of(judges)
    compiled = SubsetSelection(SubsetSelectionConfig(num_threads=2, display_progress=False)).compile(
        student, trainset=examples(4))
    record = compiled.selection
    assert record.selected == [0, 1, 2]  # each pair right by 2 of 3: 8/8; no single one is
    assert record.accuracy == 1.0 and len(compiled.judges) == 3
    assert record.description_accuracy == [0.5, 0.75, 0.75, 0.75]
    assert record.failed_calls == 0 and not record.stopped_early
    assert len(student.judges) == 4  # the student is untouched
    assert [judge.calls for judge in judges] == [8, 8, 8, 8]  # every judgment once: the search makes no calls


def test_selection_stops_once_a_subset_is_right_on_every_judgment():
    judges = [judge_of({"c0"}), judge_of({"c0", "c1", "c2", "c3"}), judge_of({"c1"}), judge_of({"c2"})]
    compiled = SubsetSelection(SubsetSelectionConfig(num_threads=2, display_progress=False)).compile(
        student_of(judges), trainset=examples(4))
    assert compiled.selection.selected == [1]
    assert compiled.selection.stopped_early and compiled.selection.judged_descriptions == 2
    assert [judge.calls for judge in judges] == [8, 8, 0, 0]


def test_failed_calls_are_no_votes_and_counted():
    flaky = judge_of({"c0", "c1", "c2", "c3"}, failing=frozenset({"c0", "r0"}))
    compiled = SubsetSelection(SubsetSelectionConfig(num_threads=1, display_progress=False)).compile(
        student_of([flaky, judge_of(set())]), trainset=examples(4))
    record = compiled.selection
    assert record.failed_calls == 2
    assert record.votes[0][:2] == [None, None]
    assert record.accuracy == 0.75  # the flaky judge's two unanswered judgments are wrong, not guessed


def test_valset_is_used_when_given():
    compiled = SubsetSelection(SubsetSelectionConfig(display_progress=False)).compile(
        student_of([judge_of({"c0"})]), trainset=examples(1), valset=examples(4))
    assert compiled.selection.examples == 8


def test_needs_examples_and_descriptions():
    with pytest.raises(ValueError, match="at least one description"):
        SubsetSelection().compile(SelectedJudge(), trainset=examples(1))
