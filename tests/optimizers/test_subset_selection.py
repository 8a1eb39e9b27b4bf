import itertools
import random

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft.loaders.personal_reward_bench import Message, PreferencePair
from prefcraft.metrics.majority_vote import encode_votes
from prefcraft.optimizers.sensejudge import (
    SubsetSelection,
    SubsetSelectionConfig,
    reference_score,
    search_subsets,
    select_per_topic,
)
from prefcraft.programs.sensejudge import SelectedJudge


def reference_right(cast: list[str | None], label: str) -> bool:
    """The reference's row vote (analysis.py), written out: each vote is right (1) or not (0, an unparseable one
    included); right when most are, and a tie goes to the first response."""
    ones = sum(vote == label for vote in cast)
    return label == "First" if 2 * ones == len(cast) else 2 * ones > len(cast)


def abstaining_right(cast: list[str | None], label: str) -> bool:
    """Failed calls left out: the majority of the cast votes, a tie to the first response, none cast: wrong."""
    cast = [vote for vote in cast if vote is not None]
    firsts = sum(vote == "First" for vote in cast)
    return bool(cast) and ("First" if 2 * firsts >= len(cast) else "Second") == label


def brute_force(votes: list[list[str | None]], gold: list[str], penalize: bool = False, unparseable: str = "against"):
    """The reference's subset scoring, written out: every subset, its row vote on every judgment."""
    right_under = reference_right if unparseable == "against" else abstaining_right
    scored = []
    for size in range(1, len(votes) + 1):
        for subset in itertools.combinations(range(len(votes)), size):
            right = {"First": 0, "Second": 0}
            for judgment, label in enumerate(gold):
                right[label] += right_under([votes[d][judgment] for d in subset], label)
            score = right["First"] + right["Second"] - (abs(right["First"] - right["Second"]) if penalize else 0)
            scored.append((subset, score))
    best = max(score for _, score in scored)
    return [subset for subset, score in scored if score == best], best


def random_votes(rng: random.Random, descriptions: int, judgments: int):
    votes = [[rng.choice(["First", "Second", "First", "Second", None]) for _ in range(judgments)]
             for _ in range(descriptions)]
    gold = [rng.choice(["First", "Second"]) for _ in range(judgments)]
    return votes, gold


@pytest.mark.parametrize("unparseable", ["against", "abstain"])
@pytest.mark.parametrize("penalize", [False, True])
def test_exhaustive_search_matches_brute_force_on_hand_made_votes(penalize, unparseable):
    rng = random.Random(7)
    for _ in range(40):
        votes, gold = random_votes(rng, rng.randint(1, 7), rng.randint(2, 12))
        search = search_subsets(encode_votes(votes), encode_votes([gold])[0], penalize_order_imbalance=penalize,
                                unparseable=unparseable)
        tied, best = brute_force(votes, gold, penalize, unparseable)
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


def reference_selection(votes: list[list[str | None]], gold: list[str]):
    """The reference's dev rule (analysis.py `select_combinations_by_dev_strategy`), written out on every subset's
    right judgments: invert the tied-worst subsets when judgments minus the worst count beat the best count."""
    right = {}
    for size in range(1, len(votes) + 1):
        for subset in itertools.combinations(range(len(votes)), size):
            right[subset] = sum(reference_right([votes[d][j] for d in subset], label) for j, label in enumerate(gold))
    best, worst = max(right.values()), min(right.values())
    if len(gold) - worst > best:
        return "inverted_worst", [subset for subset, count in right.items() if count == worst]
    return "forward_best", [subset for subset, count in right.items() if count == best]


def test_the_reference_subsets_are_the_tied_best_or_the_inverted_tied_worst_as_the_reference_decides():
    rng = random.Random(11)
    strategies = set()
    for _ in range(60):
        votes, gold = random_votes(rng, rng.randint(1, 5), rng.randint(2, 8))
        search = search_subsets(encode_votes(votes), encode_votes([gold])[0])
        strategy, subsets = reference_selection(votes, gold)
        assert (search.reference_strategy, search.reference_subsets) == (strategy, subsets)
        strategies.add(strategy)
    assert strategies == {"forward_best", "inverted_worst"}


def test_worse_than_chance_descriptions_are_inverted_and_a_tie_with_the_best_is_not():
    gold = encode_votes([["First", "Second", "First", "Second"]])[0]
    # Description 0 is wrong on all 4, description 1 right on 2; together right once (j0: a split, to the first).
    inverted = search_subsets(encode_votes([["Second", "First", "Second", "First"],
                                            ["First", "First", "Second", "Second"]]), gold)
    assert (inverted.score, inverted.worst_correct) == (2, 0)
    assert inverted.reference_strategy == "inverted_worst" and inverted.reference_subsets == [(0,)]
    # Description 0 right on 3, description 1 on 1: inverting the worst gives 4 - 1 = 3, not more than the best.
    forward = search_subsets(encode_votes([["First", "Second", "First", "First"],
                                           ["Second", "First", "Second", "Second"]]), gold)
    assert (forward.score, forward.worst_correct) == (3, 1)
    assert forward.reference_strategy == "forward_best" and forward.reference_subsets == [(0,)]


def test_the_reference_score_averages_its_subsets_and_inverts_the_worst():
    votes = encode_votes([["First", "Second"], ["Second", "First"], ["First", "Second"]])
    gold = encode_votes([["First", "Second"]])[0]
    # (0,) right on both, (1,) on none, (0, 1) splits both (to the first: right once), (0, 1, 2) right on both.
    assert reference_score(votes, gold, [(0,), (1,), (0, 1), (0, 1, 2)]) == (1 + 0 + 0.5 + 1) / 4
    assert reference_score(votes, gold, [(1,), (0, 1)], "inverted_worst") == (1 + 0.5) / 2
    failed = encode_votes([[None, "First"]])
    # Against the chosen response, a failed vote is a wrong decision, right inverted; abstaining, it decides nothing.
    assert reference_score(failed, gold, [(0,)]) == 0
    assert reference_score(failed, gold, [(0,)], "inverted_worst") == 1
    assert reference_score(failed, gold, [(0,)], "inverted_worst", "abstain") == 0.5


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


def test_every_description_is_judged_unless_early_stopping_is_asked_for():
    def judges():
        return [judge_of({"c0"}), judge_of({"c0", "c1", "c2", "c3"}), judge_of({"c1"}), judge_of({"c2"})]

    every = judges()
    compiled = SubsetSelection(SubsetSelectionConfig(num_threads=2, display_progress=False)).compile(
        student_of(every), trainset=examples(4))
    assert compiled.selection.selected == [1] and not compiled.selection.stopped_early
    assert [judge.calls for judge in every] == [8, 8, 8, 8]

    stopping = judges()
    config = SubsetSelectionConfig(num_threads=2, display_progress=False, stop_when_perfect=True)
    compiled = SubsetSelection(config).compile(student_of(stopping), trainset=examples(4))
    assert compiled.selection.selected == [1]
    assert compiled.selection.stopped_early and compiled.selection.judged_descriptions == 2
    assert [judge.calls for judge in stopping] == [8, 8, 0, 0]


def test_failed_calls_count_against_the_chosen_response_or_abstain():
    def students():
        flaky = judge_of({"c0", "c1", "c2", "c3"}, failing=frozenset({"c0", "r0"}))
        return student_of([flaky, judge_of({"c0"})])

    compiled = SubsetSelection(SubsetSelectionConfig(num_threads=1, display_progress=False)).compile(
        students(), trainset=examples(4))
    record = compiled.selection
    assert record.failed_calls == 2 and record.votes[0][:2] == [None, None]
    # Alone, the flaky judge is right on 6 of 8. With the second judge, on the c0 pair a failed vote against the
    # chosen response ties with a right one (right only when the chosen response is first); the other pairs split
    # (right only when the chosen response is first): 1 + 3 of 8. Abstaining, the c0 pair's one cast vote is right
    # in both orders: 2 + 3 of 8.
    assert record.selected == [0] and record.accuracy == 0.75 and compiled.unparseable_vote == "against"
    votes, gold = encode_votes(record.votes), encode_votes([[example.preference for example in examples(4)]])[0]
    assert reference_score(votes, gold, [(0, 1)]) == 0.5
    assert reference_score(votes, gold, [(0, 1)], unparseable="abstain") == 0.625

    config = SubsetSelectionConfig(num_threads=1, display_progress=False, unparseable_vote="abstain")
    assert SubsetSelection(config).compile(students(), trainset=examples(4)).unparseable_vote == "abstain"


def test_valset_is_used_when_given():
    compiled = SubsetSelection(SubsetSelectionConfig(display_progress=False)).compile(
        student_of([judge_of({"c0"})]), trainset=examples(1), valset=examples(4))
    assert compiled.selection.examples == 8


def test_needs_examples_and_descriptions():
    with pytest.raises(ValueError, match="at least one description"):
        SubsetSelection().compile(SelectedJudge(), trainset=examples(1))


def pair(topic: str, number: int) -> PreferencePair:
    return PreferencePair(user_id="annotator", split="train",
                          context=(Message(role="user", content=f"{topic} {number}"),),
                          chosen=Message(role="assistant", content="Short."),
                          rejected=Message(role="assistant", content="Long " * 5))


def test_each_topic_is_described_and_selected_on_its_own_dev_pairs():
    dev = {"Math": [pair("Math", 0), pair("Math", 1)], "Code": [pair("Code", 0)]}
    # Math: two pair descriptions and the aggregate, then 4 descriptions x 4 judgments; Code: 1 + 1, then 3 x 2.
    answers = [{"preference": f"Math {i}."} for i in range(3)] + [{"analysis": "a", "decision": "Response A"}] * 16
    answers += [{"preference": f"Code {i}."} for i in range(2)] + [{"analysis": "a", "decision": "Response A"}] * 6
    with dspy.context(lm=DummyLM(answers)):
        selections = select_per_topic(dev, config=SubsetSelectionConfig(num_threads=1, display_progress=False))
    assert list(selections) == ["Math", "Code"]
    assert selections["Math"].descriptions == ["", "Math 0.", "Math 1.", "Math 2."]
    assert selections["Code"].descriptions == ["", "Code 0.", "Code 1."]
    assert selections["Math"].judge.selection.examples == 4 and selections["Code"].judge.selection.examples == 2


def test_a_failed_description_stays_empty_in_its_place_and_the_selection_goes_on():
    dev = {"Math": [pair("Math", 0), pair("Math", 1)]}
    lm = DummyLM({"[[ ## labelled_pairs ## ]]": {"cut": "The user pre"},  # the aggregate: no field, as a cut reply
                  "[[ ## chosen_response ## ]]": {"preference": "Likes short answers."},
                  "[[ ## response_a ## ]]": {"analysis": "a", "decision": "Response A"}})
    with dspy.context(lm=lm):
        selection = select_per_topic(dev, config=SubsetSelectionConfig(num_threads=1, display_progress=False))["Math"]
    assert selection.descriptions == ["", "Likes short answers.", "Likes short answers.", ""]
    assert list(selection.failed_descriptions) == [3]
    record = selection.judge.selection
    assert record.descriptions == 4 and record.failed_calls == 0 and record.subsets_scored == 15
