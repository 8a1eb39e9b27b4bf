"""Pairwise preference judging (SynthesizeMe / PersonalRewardBench): the default judge of the paper's Figure 11, and the
judge of its Demographics baseline, Dong et al.'s (2024) prompt as the paper's Appendix F prints it (a choice of A or B
with a certainty from 1 to 100, no reasoning), in prefcraft's words.

Field order is part of every compiled JSON (DSPy restores field metadata by position): never reorder these fields.
"""

from typing import Literal

import dspy


class JudgePreference(dspy.Signature):
    """Given a conversation and two completions written by different models, decide which completion the human judge
    is more likely to prefer. Before deciding, learn what you can about the judge's personal preferences from any
    context you are given; when there is none, speculate about them. Being wrong is fine: explore what might be true.
    In your reasoning, put forward one to three hypotheses about the judge's preferences or persona, drawing on the
    conversation, the completions and anything the user wrote, and then make your decision."""

    conversation: str = dspy.InputField(desc="the conversation leading up to the completions")
    first_completion: str = dspy.InputField(desc="the first of the two completions to judge between")
    second_completion: str = dspy.InputField(desc="the second of the two completions to judge between")
    preference: Literal["First", "Second"] = dspy.OutputField(
        desc="the completion the judge is more likely to prefer: 'First' or 'Second'"
    )


class JudgeForProfile(dspy.Signature):
    """Given the user profile below, choose the response, from AI assistant A or from AI assistant B, that this user
    would most likely prefer: "A" when assistant A's response suits them better, "B" when assistant B's does. Then
    rate your certainty in that choice from 1 to 100:
    1-20 (uncertain): the profile gives little or no evidence; the choice rests on weak or indirect hints.
    21-40 (moderately confident): some evidence supports the choice, but not comprehensively; other readings are
    possible.
    41-60 (quite confident): clear and convincing evidence supports the choice, though it is not decisive.
    61-80 (confident): the profile holds strong evidence for the choice, with very little ambiguity.
    81-100 (highly confident): the profile gives direct, explicit evidence that settles the choice."""

    user_profile: str = dspy.InputField(desc="the user's demographic profile")
    question: str = dspy.InputField(desc="the user's conversation with the assistants, up to the two answers")
    answer_a: str = dspy.InputField(desc="assistant A's answer")
    answer_b: str = dspy.InputField(desc="assistant B's answer")
    choice: Literal["A", "B"] = dspy.OutputField(desc="the assistant whose answer the user would most likely prefer")
    certainty: int = dspy.OutputField(desc="your certainty in the choice, from 1 to 100")
