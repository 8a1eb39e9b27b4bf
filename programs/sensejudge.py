"""SenseJudge (seeds/004): preference descriptions written from one annotator's labelled dev pairs, and the judge that
votes with the descriptions an optimizer selected (optimizers/sensejudge.py).

`PreferenceExtractor` writes the reference code's set: an empty description (the judge without user context), one
description per dev pair, and one aggregate over all of them; each of one very concise sentence within 512 tokens, as
the public reference code asks (1_get_preference.py, util.py's `chat`), or of about three sentences, as the paper's
prompt asks (Appendix A.2, `length="three_sentences"`). A description whose call fails keeps its place, empty, and its
reason is recorded (`failures`).
`DescriptionJudge` is the paper's judge (Appendix A.2): the description is the user's preferences it scores both
responses on before it decides. `SelectedJudge` asks one such judge per selected description and returns their
majority vote; a tie goes to the first response, and a failed call counts against the response the user chose, as in
the reference (or abstains: `unparseable_vote`). Selected per topic (the paper's way), it holds each topic's subset and
judges a pair with its topic's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import dspy

from prefcraft.engine.item_failures import failure_reason, is_item_failure
from prefcraft.metrics.majority_vote import UnparseableVote, majority_preference
from prefcraft.signatures.sensejudge import (
    AGGREGATE_ONE_SENTENCE,
    EXTRACT_ONE_SENTENCE,
    AggregatePreference,
    ExtractPreference,
    JudgeByPreferences,
)

PREFERENCES_TEMPLATE = """{instructions}

The user's preferences:
===
{description}
==="""
POSITIONS = {"Response A": "First", "Response B": "Second"}
SAVED_JUDGE = re.compile(r"^judges\[(\d+)\]\.")
VOTE_RULE_KEY = "unparseable_vote"
TOPICS_KEY = "topics"
DescriptionLength = Literal["one_sentence", "three_sentences"]
DESCRIPTION_MAX_TOKENS = 512
"""The reference's budget for writing a description (util.py's `chat`); its judge gets the task model's 1,024."""


class DescriptionJudge(dspy.Module):
    """Scores two completions on one description of the user's preferences, then decides ('First' or 'Second').

    The empty description gives the judge without user context: the reference sends the same prompt with an empty
    preferences block.
    """

    def __init__(self, description: str = ""):
        super().__init__()
        instructions = PREFERENCES_TEMPLATE.format(instructions=JudgeByPreferences.instructions,
                                                   description=description.strip())
        self.judge = dspy.Predict(JudgeByPreferences.with_instructions(instructions))

    def forward(self, conversation: str, first_completion: str, second_completion: str) -> dspy.Prediction:
        scored = self.judge(query=conversation, response_a=first_completion, response_b=second_completion)
        return dspy.Prediction(preference=POSITIONS[scored.decision], analysis=scored.analysis)


def description_judge(description: str) -> DescriptionJudge:
    """The judge conditioned on one description; the empty description gives the judge without user context."""
    return DescriptionJudge(description)


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
    reads every pair. `length`: one very concise sentence per description (the public reference code's prompt) or
    about three sentences (the paper's). Every description call gets `DESCRIPTION_MAX_TOKENS`.

    A call that fails (an aggregate over the context length, a reply cut at its token limit) leaves its description
    empty and goes on: the reference keeps whatever text came back in that place, and its judge reads a description
    with no text as an empty preferences block (2_judge.py `normalize_preference`). The prediction's `failures` maps
    each failed description's position to the error.
    """

    def __init__(self, max_pair_descriptions: int | None = None, length: DescriptionLength = "one_sentence"):
        super().__init__()
        extract, aggregate = ExtractPreference, AggregatePreference
        if length == "one_sentence":
            extract = extract.with_instructions(EXTRACT_ONE_SENTENCE)
            aggregate = aggregate.with_instructions(AGGREGATE_ONE_SENTENCE)
        self.extract = dspy.Predict(extract, max_tokens=DESCRIPTION_MAX_TOKENS)
        self.aggregate = dspy.Predict(aggregate, max_tokens=DESCRIPTION_MAX_TOKENS)
        self.max_pair_descriptions = max_pair_descriptions

    def forward(self, pairs: Sequence[Mapping[str, str]]) -> dspy.Prediction:
        if not pairs:
            raise ValueError("PreferenceExtractor needs at least one labelled pair")
        described = pairs if self.max_pair_descriptions is None else pairs[: self.max_pair_descriptions]
        calls = [*(lambda pair=pair: self.extract(**pair) for pair in described),
                 lambda: self.aggregate(labelled_pairs=format_labelled_pairs(pairs))]
        descriptions, failures = [""], {}
        for position, call in enumerate(calls, 1):
            try:
                descriptions.append(call().preference)
            except Exception as failure:
                if not is_item_failure(failure):
                    raise
                descriptions.append("")
                failures[position] = failure_reason(failure)
        return dspy.Prediction(descriptions=descriptions, failures=failures)


class SelectedJudge(dspy.Module):
    """The majority vote of one description-conditioned judge per selected description.

    A judge whose call fails casts no vote (None in the prediction's `votes`). With `unparseable_vote="against"` (the
    reference's rule) it counts as a vote for the response the user did not choose; not knowing which that is, the
    judge decides only when no such vote could change the decision, and predicts None (a wrong judgment) otherwise.
    With "abstain" the failed call is left out of the vote. When every call fails, the last error is raised, so that
    an evaluation counts the judgment as failed instead of guessing. The rule is saved with the program.

    Selected per topic (`of_topics`), `topics` maps each topic to the positions of its judges in `judges`, and a call
    names its `topic`; selected once over all pairs, `topics` is empty and every judge votes.
    """

    def __init__(self, descriptions: Sequence[str] = (), unparseable_vote: UnparseableVote = "against"):
        super().__init__()
        self.judges = [description_judge(description) for description in descriptions]
        self.unparseable_vote = unparseable_vote
        self.topics: dict[str, list[int]] = {}

    @classmethod
    def of_topics(cls, judges: Mapping[str, SelectedJudge]) -> SelectedJudge:
        """One judge holding each topic's selected judge (all compiled with the same vote rule)."""
        combined = cls(unparseable_vote=next(iter(judges.values())).unparseable_vote)
        for topic, judge in judges.items():
            start = len(combined.judges)
            combined.judges += judge.judges
            combined.topics[topic] = list(range(start, len(combined.judges)))
        return combined

    def for_topic(self, topic: str | None) -> SelectedJudge:
        """The judge of `topic`'s selected subset; a judge selected over all pairs is its own for every topic."""
        if not self.topics:
            return self
        if topic not in self.topics:
            raise ValueError(f"SelectedJudge has descriptions for the topics {', '.join(self.topics)}, not for "
                             f"{topic!r}: name one with `topic=`")
        judge = SelectedJudge(unparseable_vote=self.unparseable_vote)
        judge.judges = [self.judges[index] for index in self.topics[topic]]
        return judge

    def forward(
        self, conversation: str, first_completion: str, second_completion: str, topic: str | None = None
    ) -> dspy.Prediction:
        if self.topics:
            return self.for_topic(topic).forward(conversation, first_completion, second_completion)
        if not self.judges:
            raise ValueError("SelectedJudge has no descriptions: compile it with SubsetSelection or load one")
        votes: list[str | None] = []
        error: Exception | None = None
        for judge in self.judges:
            try:
                votes.append(judge(conversation=conversation, first_completion=first_completion,
                                   second_completion=second_completion).preference)
            except Exception as failure:  # any failed call casts no vote; the vote rule decides what it counts as
                votes.append(None)
                error = failure
        if error is not None and all(vote is None for vote in votes):
            raise error
        return dspy.Prediction(preference=majority_preference(votes, self.unparseable_vote), votes=votes)

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        return {**super().dump_state(json_mode=json_mode), VOTE_RULE_KEY: self.unparseable_vote,
                TOPICS_KEY: self.topics}

    def load_state(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False) -> SelectedJudge:
        # DSPy loads state into the parameters a program already has; the number of judges is only known from the
        # file, so one judge per saved judge is built first. Their descriptions come back with their instructions.
        count = len({match.group(1) for key in state if (match := SAVED_JUDGE.match(key))})
        restored = [description_judge("") for _ in range(count)]
        holder = SelectedJudge()
        holder.judges = restored
        super(SelectedJudge, holder).load_state(state, allow_unsafe_lm_state=allow_unsafe_lm_state)
        self.judges = restored
        self.unparseable_vote = state.get(VOTE_RULE_KEY, self.unparseable_vote)
        self.topics = {topic: list(positions) for topic, positions in state.get(TOPICS_KEY, {}).items()}
        return self
