"""SenseJudge (seeds/004): preference extraction (one annotator's labelled pairs in, a preference description out)
and the judge that applies descriptions (Appendix A.2: score each response on the stated preferences, then decide).

Field order is part of every compiled JSON: never reorder these fields.
"""

from typing import Literal

import dspy


class ExtractPreference(dspy.Signature):
    """A user compared two assistant responses to the same request and chose one. The conversation is a dialogue
    between the user and an assistant that ends with the user's request; both responses answer that request. Describe,
    in one to three sentences, the user's preference that explains why they chose the chosen response over the rejected
    one. Speak about higher-level qualities the user values (length, structure, tone, depth, rigour, language), not
    about the details, words or phrasing of this request or these responses. Answer in English."""

    conversation: str = dspy.InputField(desc="the dialogue so far, ending with the user's request")
    chosen_response: str = dspy.InputField(desc="the response the user chose")
    rejected_response: str = dspy.InputField(desc="the response the user rejected")
    preference: str = dspy.OutputField(desc="the user's preference, in one to three sentences")


class AggregatePreference(dspy.Signature):
    """The labelled comparisons below all come from the same user: in each, the user chose one of two assistant
    responses to a request. Describe, in one to three sentences, the preference that explains the user's choices
    across all of them. Speak about higher-level qualities the user values (length, structure, tone, depth, rigour,
    language), not about the details, words or phrasing of any one request or response. Answer in English."""

    labelled_pairs: str = dspy.InputField(desc="the user's comparisons: each request, chosen and rejected response")
    preference: str = dspy.OutputField(desc="the user's preference, in one to three sentences")


class JudgeByPreferences(dspy.Signature):
    """Evaluate two responses to the user's query and decide which one is better. The user's preferences, given
    below, are the guidelines for the evaluation. First, score each of the two responses on the user's preferences.
    Then, from those scores, decide which response is better: Response A or Response B."""

    query: str = dspy.InputField(desc="the user's query, with the dialogue that leads up to it")
    response_a: str = dspy.InputField(desc="Response A")
    response_b: str = dspy.InputField(desc="Response B")
    analysis: str = dspy.OutputField(desc="the score of each response on the user's preferences, with the reasons")
    decision: Literal["Response A", "Response B"] = dspy.OutputField(
        desc="the better response, decided from the scores: 'Response A' or 'Response B'"
    )
