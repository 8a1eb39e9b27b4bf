"""Persona synthesis (SynthesizeMe step 2): verified judgments in, a natural-language persona out.

Field order is part of every compiled JSON: never reorder these fields.
"""

import dspy


class SynthesizePersona(dspy.Signature):
    """Read a user's past preference judgments, each with the reasoning that explains it, and write a persona of this
    user: who they are likely to be, and what they value and dislike in an assistant's responses (length, tone, format,
    level of detail, use of examples, topics). Speak about the user in the third person and be specific enough that
    another judge could predict their next preference from the persona alone."""

    past_judgments: str = dspy.InputField(
        desc="the user's past judgments: each conversation, the two completions, the reasoning and the preferred one"
    )
    persona: str = dspy.OutputField(desc="a paragraph describing the user and their preferences")
