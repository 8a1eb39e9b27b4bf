"""Answering a user's request in a dialogue: the response models whose outputs a judge compares.

Field order is part of every compiled JSON: never reorder these fields.
"""

import dspy


class RespondToUser(dspy.Signature):
    """You are an assistant. Reply to the user's last message in the conversation, in the language the user writes
    in."""

    conversation: str = dspy.InputField(desc="the dialogue so far, ending with the user's request")
    response: str = dspy.OutputField(desc="the assistant's reply to the user's last message")
