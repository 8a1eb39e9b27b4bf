"""The persona synthesizer: one call from a user's verified judgments to a persona. Its prompt is what MIPROv2
compiles once over training users (optimizers/persona_prompt.py)."""

import dspy

from signatures.persona import SynthesizePersona


class PersonaSynthesizer(dspy.Module):
    def __init__(self):
        super().__init__()
        self.synthesize = dspy.Predict(SynthesizePersona)

    def forward(self, past_judgments: str) -> dspy.Prediction:
        return self.synthesize(past_judgments=past_judgments)
