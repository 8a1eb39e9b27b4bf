import numpy as np

from prefcraft.metrics.majority_vote import (
    FIRST,
    NO_VOTE,
    SECOND,
    encode_votes,
    majority_decisions,
    majority_preference,
)


def test_votes_encode_failed_calls_as_no_vote():
    votes = encode_votes([["First", "Second", None]])
    assert votes.tolist() == [[FIRST, SECOND, NO_VOTE]]
    assert encode_votes([]).shape == (0, 0)


def test_majority_ignores_missing_votes_and_breaks_ties_to_the_first_response():
    assert majority_preference(["Second", "Second", "First"]) == "Second"
    assert majority_preference(["Second", "First"]) == "First"  # a tie: the reference defaults to response A
    assert majority_preference(["Second", None, None]) == "Second"
    assert majority_preference([None, None]) is None


def test_every_subset_is_decided_at_once():
    votes = encode_votes([["First", "Second"], ["Second", "Second"], ["Second", None]])
    subsets = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [1, 1, 1]])
    assert majority_decisions(votes, subsets).tolist() == [[FIRST, SECOND], [SECOND, SECOND], [FIRST, SECOND],
                                                           [SECOND, SECOND]]
