"""Majority votes of several pairwise judges, for many subsets of judges at once (SenseJudge's preference subsets,
seeds/004 §3.2.4-3.2.5; ties and failed calls as in the reference code, 2_judge.py / 3_judge_count.py).

Votes are a (judges, judgments) array of FIRST (+1), SECOND (-1) or NO_VOTE (0, a failed or unparseable call);
subsets are a (subsets, judges) 0/1 array. A subset's decision on a judgment is the position most of its votes name;
a tie goes to the first response, as in the reference code.

A failed call counts as the reference counts it (`unparseable_vote="against"`, the default): as a vote against the
response the user chose. Without knowing which response that is, a decision is still exact: the subset decides FIRST
when its cast votes lead the failed ones toward FIRST or tie (margin - failed >= 0), SECOND when they lead toward
SECOND beyond them (margin + failed < 0), and nothing (NO_VOTE, which scores as wrong) in between, where the failed
votes make it wrong whichever response was chosen. With "abstain", a failed call is left out of the vote and a subset
with no cast vote decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np

FIRST, SECOND, NO_VOTE = 1, -1, 0
CODES = {"First": FIRST, "Second": SECOND}
NAMES = {FIRST: "First", SECOND: "Second"}
UnparseableVote = Literal["against", "abstain"]


def encode_votes(predictions: Iterable[Sequence[str | None]]) -> np.ndarray:
    """One row per judge of 'First' / 'Second' / None (no vote) as an int8 array."""
    rows = [[CODES.get(prediction, NO_VOTE) if prediction else NO_VOTE for prediction in row] for row in predictions]
    return np.array(rows, dtype=np.int8) if rows else np.zeros((0, 0), dtype=np.int8)


def decode_vote(code: int) -> str | None:
    return NAMES.get(int(code))


def majority_decisions(votes: np.ndarray, subsets: np.ndarray, unparseable: UnparseableVote = "against") -> np.ndarray:
    """The (subsets, judgments) decisions of every subset's majority vote."""
    subsets = subsets.astype(np.int32)
    margin = subsets @ votes.astype(np.int32)
    if unparseable == "abstain":
        cast = subsets @ (votes != NO_VOTE).astype(np.int32)
        decisions = np.where(margin < 0, SECOND, np.where(cast > 0, FIRST, NO_VOTE))
    else:
        failed = subsets @ (votes == NO_VOTE).astype(np.int32)
        decisions = np.where(margin - failed >= 0, FIRST, np.where(margin + failed < 0, SECOND, NO_VOTE))
    return decisions.astype(np.int8)


def majority_preference(votes: Sequence[str | None], unparseable: UnparseableVote = "against") -> str | None:
    """One judgment's majority vote over `votes` ('First' / 'Second' / None for a failed call)."""
    decisions = majority_decisions(encode_votes([[vote] for vote in votes]), np.ones((1, len(votes)), dtype=np.int8),
                                   unparseable)
    return decode_vote(decisions[0, 0])
