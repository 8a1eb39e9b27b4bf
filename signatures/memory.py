"""Memory baseline (SynthesizeMe's comparison): insights about the user extracted from each past interaction.

The paper's ExtractInsights returns a list or a string; a string with one insight per line keeps constrained decoding
fast on llama.cpp, whose grammars for lists of bounded strings are slow to sample.
Field order is part of every compiled JSON: never reorder these fields.
"""

import dspy


class ExtractInsights(dspy.Signature):
    """From one past interaction in which the user preferred one completion over another, write between one and five
    insights about what this user values in responses, one insight per line."""

    conversation: str = dspy.InputField(desc="the conversation leading up to the completions")
    preferred_completion: str = dspy.InputField(desc="the completion the user preferred")
    other_completion: str = dspy.InputField(desc="the completion the user did not prefer")
    insights: str = dspy.OutputField(desc="one to five insights about the user's preferences, one per line")
