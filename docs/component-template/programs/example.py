"""The template component's program: every `dspy.Predict` sits behind a program here, never in a component."""

import dspy

from prefcraft.signatures.example import AnswerRequest


class Answerer(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.answer = dspy.Predict(AnswerRequest)

    def forward(self, request: str) -> dspy.Prediction:
        return self.answer(request=request)
