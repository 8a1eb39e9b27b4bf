import itertools

import numpy as np

from prefcraft.metrics.majority_vote import (
    FIRST,
    NO_VOTE,
    SECOND,
    decode_vote,
    encode_votes,
    majority_decisions,
    majority_preference,
)


def test_votes_encode_failed_calls_as_no_vote():
    votes = encode_votes([["First", "Second", None]])
    assert votes.tolist() == [[FIRST, SECOND, NO_VOTE]]
    assert encode_votes([]).shape == (0, 0)


def test_a_failed_vote_counts_against_the_chosen_response_and_ties_go_to_the_first():
    assert majority_preference(["Second", "Second", "First"]) == "Second"
    assert majority_preference(["Second", "First"]) == "First"  # a tie: the reference defaults to response A
    assert majority_preference(["Second", "Second", None]) == "Second"  # right whichever way the failure counts
    assert majority_preference(["First", None]) == "First"  # chosen first: 1 right of 2, a tie, right
    # Wrong whichever response was chosen (chosen second: 1 of 2, a tie, goes to the first response): no decision.
    assert majority_preference(["Second", None]) is None
    assert majority_preference(["Second", None, None]) is None
    assert majority_preference([None, None]) is None


def test_abstaining_leaves_failed_votes_out():
    assert majority_preference(["Second", None], "abstain") == "Second"
    assert majority_preference(["Second", None, None], "abstain") == "Second"
    assert majority_preference([None, None], "abstain") is None


def reference_right(correct: list[int], chosen_first: bool) -> bool:
    """The reference's row vote (analysis.py) on correctness indicators: most right, or a tie (which goes to the
    first response) when the chosen response is first."""
    ones = sum(correct)
    return chosen_first if 2 * ones == len(correct) else 2 * ones > len(correct)


def test_decisions_equal_the_reference_arithmetic_on_every_vote_combination():
    for size in range(1, 6):
        for combination in itertools.product(["First", "Second", None], repeat=size):
            decision = majority_preference(list(combination))
            for chosen in ("First", "Second"):
                correct = [int(vote == chosen) for vote in combination]  # unparseable: 0
                assert (decision == chosen) == reference_right(correct, chosen == "First"), (combination, chosen)


def test_every_subset_is_decided_at_once():
    votes = encode_votes([["First", "Second"], ["Second", "Second"], ["Second", None]])
    subsets = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [1, 1, 1]])
    assert majority_decisions(votes, subsets).tolist() == [[FIRST, SECOND], [SECOND, NO_VOTE], [FIRST, SECOND],
                                                           [SECOND, SECOND]]
    assert majority_decisions(votes, subsets, "abstain").tolist() == [[FIRST, SECOND], [SECOND, SECOND],
                                                                      [FIRST, SECOND], [SECOND, SECOND]]
    assert decode_vote(NO_VOTE) is None
