"""Persona synthesis (SynthesizeMe step 2, the paper's Figure 12): verified judgments in, a natural-language persona
out. The paper names the fields `past_judgements` and `synthesized_persona`; its released programs are imported with
those names mapped (prefcraft/components/synthesizeme/released_prompt.py).

Field order is part of every compiled JSON: never reorder these fields.
"""

import dspy


class SynthesizePersona(dspy.Signature):
    """From a user's judgments on earlier conversations, together with the reasoning behind each judgment, build a
    concise persona of this user that describes their preferences and anything else we might know about them."""

    past_judgments: str = dspy.InputField(
        desc="the user's judgments on earlier conversations, each with the reasoning behind it"
    )
    persona: str = dspy.OutputField(desc="a persona of the user that can inform predictions of their future judgments")
