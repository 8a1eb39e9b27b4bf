"""The default LLM-as-judge: chain of thought over a conversation and two completions, no user context."""

import dspy

from signatures.judge import JudgePreference


class DefaultJudge(dspy.Module):
    """Predicts which of two completions a user prefers. The non-personalized baseline of SynthesizeMe."""

    def __init__(self):
        super().__init__()
        self.judge = dspy.ChainOfThought(JudgePreference)

    def forward(self, conversation: str, first_completion: str, second_completion: str) -> dspy.Prediction:
        return self.judge(
            conversation=conversation, first_completion=first_completion, second_completion=second_completion
        )
