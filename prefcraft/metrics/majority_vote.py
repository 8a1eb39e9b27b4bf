"""Majority votes of several pairwise judges, for many subsets of judges at once (SenseJudge's preference subsets,
seeds/004 §3.2.4-3.2.5; ties and failed calls as in the reference code, 2_judge.py / 3_judge_count.py).

Votes are a (judges, judgments) array of FIRST (+1), SECOND (-1) or NO_VOTE (0, a failed call); subsets are a
(subsets, judges) 0/1 array. A subset's decision on a judgment is the position most of its cast votes name; a tie
goes to the first response, as in the reference code; a subset with no cast vote decides nothing (NO_VOTE), which
scores as wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

FIRST, SECOND, NO_VOTE = 1, -1, 0
CODES = {"First": FIRST, "Second": SECOND}
NAMES = {FIRST: "First", SECOND: "Second"}


def encode_votes(predictions: Iterable[Sequence[str | None]]) -> np.ndarray:
    """One row per judge of 'First' / 'Second' / None (no vote) as an int8 array."""
    rows = [[CODES.get(prediction, NO_VOTE) if prediction else NO_VOTE for prediction in row] for row in predictions]
    return np.array(rows, dtype=np.int8) if rows else np.zeros((0, 0), dtype=np.int8)


def decode_vote(code: int) -> str | None:
    return NAMES.get(int(code))


def majority_decisions(votes: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """The (subsets, judgments) decisions of every subset's majority vote."""
    subsets = subsets.astype(np.int32)
    margin = subsets @ votes.astype(np.int32)
    cast = subsets @ (votes != NO_VOTE).astype(np.int32)
    return np.where(margin < 0, SECOND, np.where(cast > 0, FIRST, NO_VOTE)).astype(np.int8)


def majority_preference(votes: Sequence[str | None]) -> str | None:
    """One judgment's majority vote over `votes` ('First' / 'Second' / None for a failed call)."""
    decisions = majority_decisions(encode_votes([[vote] for vote in votes]), np.ones((1, len(votes)), dtype=np.int8))
    return decode_vote(decisions[0, 0])
