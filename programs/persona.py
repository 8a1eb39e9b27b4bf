"""The persona synthesizer: one chain-of-thought call (as in the paper) from a user's verified judgments to a
persona. Its prompt is what MIPROv2 compiles once over training users (optimizers/persona_prompt.py)."""

import dspy

from prefcraft.signatures.persona import SynthesizePersona


class PersonaSynthesizer(dspy.Module):
    def __init__(self):
        super().__init__()
        self.synthesize = dspy.ChainOfThought(SynthesizePersona)

    def forward(self, past_judgments: str) -> dspy.Prediction:
        return self.synthesize(past_judgments=past_judgments)
