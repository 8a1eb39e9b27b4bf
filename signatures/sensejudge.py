"""SenseJudge (seeds/004): preference extraction (one annotator's labelled pairs in, a preference description out)
and the judge that applies descriptions (Appendix A.2: score each response on the stated preferences, then decide).

The extractor's default instructions are the public reference code's (1_get_preference.py: one very concise
sentence), `EXTRACT_ONE_SENTENCE` and `AGGREGATE_ONE_SENTENCE`; the signatures' own are the paper's prompt (Appendix
A.2: about three sentences), the option `length="three_sentences"`. The aggregate over several pairs, which only the
reference code writes, asks the same of all of them.

Field order is part of every compiled JSON: never reorder these fields.
"""

from typing import Literal

import dspy


class ExtractPreference(dspy.Signature):
    """You are shown one pairwise comparison: a conversation and two assistant responses to it, the one the user
    chose (the chosen response) and the one they did not (the rejected response). The conversation is the user's
    dialogue with an assistant, ending with the user's request or question; both responses answer it. Describe the
    user's persona preference concisely and specifically, in about three single sentences: give the reasons why the
    user picked the chosen response and not the rejected one, as the higher-level preferences one can infer about the
    user's persona. Keep it concise, and do not mention specific details, exact words or phrasing of the conversation
    or the responses. Answer in English."""

    conversation: str = dspy.InputField(desc="the dialogue so far, ending with the user's request")
    chosen_response: str = dspy.InputField(desc="the response the user chose")
    rejected_response: str = dspy.InputField(desc="the response the user rejected")
    preference: str = dspy.OutputField(desc="the user's persona preference")


class AggregatePreference(dspy.Signature):
    """You are shown several pairwise comparisons by the same user: in each, a conversation ending with the user's
    request, and two assistant responses to it, the one the user chose and the one they rejected. Describe the user's
    persona preference concisely and specifically, in about three single sentences: give the reasons why the user
    picked the chosen responses and not the rejected ones, as the higher-level preferences one can infer about the
    user's persona across all the comparisons. Keep it concise, and do not mention specific details, exact words or
    phrasing of any conversation or response. Answer in English."""

    labelled_pairs: str = dspy.InputField(desc="the user's comparisons: each request, chosen and rejected response")
    preference: str = dspy.OutputField(desc="the user's persona preference")


# The public reference code's instructions (1_get_preference.py), in prefcraft's words: one very concise sentence.
EXTRACT_ONE_SENTENCE = """You are shown one pairwise comparison: a conversation and two assistant responses to it,
the one the user chose (the chosen response) and the one they did not (the rejected response). The conversation is
the user's dialogue with an assistant, ending with the user's request or question; both responses answer it. Describe
the user's persona preference in one very concise, specific sentence: the reason why the user picked the chosen
response and not the rejected one, as a higher-level trait one can infer about the user's persona. Do not mention
specific details, exact words or phrasing of the conversation or the responses. Answer in English."""
AGGREGATE_ONE_SENTENCE = """You are shown several pairwise comparisons by the same user: in each, a conversation
ending with the user's request, and two assistant responses to it, the one the user chose and the one they rejected.
Describe the user's persona preference in one very concise, specific sentence: the reason why the user picked the
chosen responses and not the rejected ones, as a higher-level trait one can infer about the user's persona across all
the comparisons. Do not mention specific details, exact words or phrasing of any conversation or response. Answer in
English."""


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
