"""A topic's judge set and the votes cast on it, as the metrics read them: the labels as votes, and decisions as
judgments."""

from __future__ import annotations

from collections.abc import Sequence

import dspy
import numpy as np

from prefcraft.metrics.majority_vote import encode_votes
from prefcraft.metrics.pairwise import Judgment


def gold(examples: Sequence[dspy.Example]) -> np.ndarray:
    return encode_votes([[example.preference for example in examples]])[0]


def judgments(examples: Sequence[dspy.Example], predictions: Sequence[str | None]) -> list[Judgment]:
    return [Judgment(user_id=example.user_id, pair_id=example.pair_id, order=example.order, predicted=predicted,
                     correct=predicted == example.preference)
            for example, predicted in zip(examples, predictions, strict=True)]
