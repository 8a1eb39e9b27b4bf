"""Pairwise preference judging (SynthesizeMe / PersonalRewardBench): the default judge of the paper's Figure 11.

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
