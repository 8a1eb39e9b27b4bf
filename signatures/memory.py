"""Memory baseline (SynthesizeMe's comparison, the paper's Figure 14): insights about the user extracted from each past
conversation, read alone (the completions the user chose between are not shown).

The paper's ExtractInsights returns a list or a string; a string with one insight per line keeps constrained decoding
fast on llama.cpp, whose grammars for lists of bounded strings are slow to sample.
Field order is part of every compiled JSON: never reorder these fields.
"""

import dspy

NO_INSIGHTS = "no insights found"


class ExtractInsights(dspy.Signature):
    """Given a conversation between a user and an LLM, extract insights from it that can update our profile of the user
    and our understanding of their preferences and interests. If there are no insights, answer "no insights found".
    Each insight is one to two complete sentences, as informative about the user as possible."""

    conversation: str = dspy.InputField(desc="the conversation between the user and the LLM")
    insights: str = dspy.OutputField(
        desc=f'the insights extracted from the conversation, one per line; "{NO_INSIGHTS}" if there are none')
