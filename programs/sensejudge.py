"""SenseJudge (seeds/004): preference descriptions written from one annotator's labelled dev pairs, and the judge that
votes with the descriptions an optimizer selected (optimizers/sensejudge.py).

`PreferenceExtractor` writes the reference code's set: an empty description (the judge without user context), one
description per dev pair, and one aggregate over all of them. A description conditions the existing
`PreferenceJudge` as its user context. `SelectedJudge` asks one such judge per selected description and returns their
majority vote; a tie goes to the first response, as in the reference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from prefcraft.metrics.majority_vote import majority_preference
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.signatures.sensejudge import AggregatePreference, ExtractPreference

DESCRIPTION_HEADING = "The user has the following preferences"
SAVED_JUDGE = re.compile(r"^judges\[(\d+)\]\.")


def description_judge(description: str) -> PreferenceJudge:
    """The judge conditioned on one description; the empty description gives the judge without user context."""
    return PreferenceJudge(description, heading=DESCRIPTION_HEADING)


def format_labelled_pairs(pairs: Sequence[Mapping[str, str]]) -> str:
    """Labelled pairs as the aggregate extractor reads them."""
    return "\n\n".join(
        f"Comparison {number}\nConversation:\n{pair['conversation']}\nChosen response:\n{pair['chosen_response']}\n"
        f"Rejected response:\n{pair['rejected_response']}"
        for number, pair in enumerate(pairs, 1)
    )


class PreferenceExtractor(dspy.Module):
    """Labelled pairs (conversation, chosen_response, rejected_response) -> candidate preference descriptions.

    `max_pair_descriptions` caps how many pairs (the first ones) get a description of their own; the aggregate always
    reads every pair.
    """

    def __init__(self, max_pair_descriptions: int | None = None):
        super().__init__()
        self.extract = dspy.Predict(ExtractPreference)
        self.aggregate = dspy.Predict(AggregatePreference)
        self.max_pair_descriptions = max_pair_descriptions

    def forward(self, pairs: Sequence[Mapping[str, str]]) -> dspy.Prediction:
        if not pairs:
            raise ValueError("PreferenceExtractor needs at least one labelled pair")
        described = pairs if self.max_pair_descriptions is None else pairs[: self.max_pair_descriptions]
        per_pair = [self.extract(**pair).preference for pair in described]
        aggregate = self.aggregate(labelled_pairs=format_labelled_pairs(pairs)).preference
        return dspy.Prediction(descriptions=["", *per_pair, aggregate])


class SelectedJudge(dspy.Module):
    """The majority vote of one description-conditioned judge per selected description.

    A judge whose call fails abstains (its vote is None in the prediction's `votes`); when every call fails, the last
    error is raised, so that an evaluation counts the judgment as failed instead of guessing.
    """

    def __init__(self, descriptions: Sequence[str] = ()):
        super().__init__()
        self.judges = [description_judge(description) for description in descriptions]

    def forward(self, conversation: str, first_completion: str, second_completion: str) -> dspy.Prediction:
        if not self.judges:
            raise ValueError("SelectedJudge has no descriptions: compile it with SubsetSelection or load one")
        votes: list[str | None] = []
        error: Exception | None = None
        for judge in self.judges:
            try:
                votes.append(judge(conversation=conversation, first_completion=first_completion,
                                   second_completion=second_completion).preference)
            except Exception as failure:  # any failed call abstains; the vote records it
                votes.append(None)
                error = failure
        if error is not None and all(vote is None for vote in votes):
            raise error
        return dspy.Prediction(preference=majority_preference(votes), votes=votes)

    def load_state(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False) -> SelectedJudge:
        # DSPy loads state into the parameters a program already has; the number of judges is only known from the
        # file, so one judge per saved judge is built first. Their descriptions come back with their instructions.
        count = len({match.group(1) for key in state if (match := SAVED_JUDGE.match(key))})
        restored = [description_judge("") for _ in range(count)]
        holder = SelectedJudge()
        holder.judges = restored
        super(SelectedJudge, holder).load_state(state, allow_unsafe_lm_state=allow_unsafe_lm_state)
        self.judges = restored
        return self
