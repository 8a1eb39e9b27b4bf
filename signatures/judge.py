"""Pairwise preference judging (SynthesizeMe / PersonalRewardBench).

Field order is part of every compiled JSON (DSPy restores field metadata by position): never reorder these fields.
"""

from typing import Literal

import dspy


class JudgePreference(dspy.Signature):
    """Given a conversation and two completions from different models, determine which completion the human judge is
    more likely to prefer. Use any provided context to speculate about the personal preferences of the judge."""

    conversation: str = dspy.InputField(desc="the conversation leading up to the completions")
    first_completion: str = dspy.InputField(desc="the first of the two completions to judge between")
    second_completion: str = dspy.InputField(desc="the second of the two completions to judge between")
    preference: Literal["First", "Second"] = dspy.OutputField(
        desc="the completion the judge is more likely to prefer: 'First' or 'Second'"
    )
