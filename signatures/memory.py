"""Memory baseline (SynthesizeMe's comparison): insights about the user extracted from each past interaction.

Field order is part of every compiled JSON: never reorder these fields.
"""

from typing import Annotated

import dspy
from pydantic import Field


class ExtractInsights(dspy.Signature):
    """From one past interaction in which the user preferred one completion over another, write between one and five
    short insights about what this user values in responses."""

    conversation: str = dspy.InputField(desc="the conversation leading up to the completions")
    preferred_completion: str = dspy.InputField(desc="the completion the user preferred")
    other_completion: str = dspy.InputField(desc="the completion the user did not prefer")
    insights: Annotated[list[str], Field(min_length=1, max_length=5)] = dspy.OutputField(
        desc="one to five short insights about the user's preferences"
    )
