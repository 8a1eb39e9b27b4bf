"""The pairwise preference judge: chain of thought over a conversation and two completions.

Without user context it is SynthesizeMe's default LLM-as-judge. With user context (a persona, memory insights or
demographics) that context becomes part of its instructions, as in the paper; demos are set by an optimizer.
`ProfileJudge` is the paper's Demographics baseline, a prompt of its own (Dong et al.'s).
"""

import dspy

from prefcraft.signatures.judge import JudgeForProfile, JudgePreference

# The judge given user context (the paper's Figures 13 and 14) has instructions of its own: it is not asked for the
# default judge's one to three speculations (Figure 11), as it is told what is known of the user.
USER_CONTEXT_TEMPLATE = (
    "Given a conversation and two completions from different models, determine which completion the human judge is\n"
    "more likely to prefer. Use any provided context to speculate about the personal preferences of the judge.\n\n"
    "You are a personalized reward model for one user. {heading}:\n===\n{context}\n===\n"
    "Given the conversation and the two completions, decide which completion this user is more likely to prefer, "
    "keeping\nwhat you know about them in mind."
)


POSITIONS = {"A": "First", "B": "Second"}
"""`ProfileJudge`'s assistants as `PreferenceJudge`'s answers name them."""


class PreferenceJudge(dspy.Module):
    """Predicts which of two completions a user prefers ('First' or 'Second')."""

    def __init__(self, user_context: str = "", heading: str = "The user has the following persona"):
        super().__init__()
        self.judge = dspy.ChainOfThought(JudgePreference)
        if user_context:
            instructions = USER_CONTEXT_TEMPLATE.format(heading=heading, context=user_context.strip())
            self.judge.predict.signature = self.judge.predict.signature.with_instructions(instructions)

    @property
    def demos(self) -> list[dspy.Example]:
        return self.judge.predict.demos

    @demos.setter
    def demos(self, demos: list[dspy.Example]) -> None:
        self.judge.predict.demos = list(demos)

    def forward(self, conversation: str, first_completion: str, second_completion: str) -> dspy.Prediction:
        return self.judge(
            conversation=conversation, first_completion=first_completion, second_completion=second_completion
        )


class ProfileJudge(dspy.Module):
    """SynthesizeMe's Demographics baseline: Dong et al.'s judge, told the user's demographic profile, picks assistant A
    (the first completion) or B with a certainty and no reasoning. It answers as `PreferenceJudge` does ('First' for A),
    so that it is scored the same way."""

    def __init__(self, profile: str):
        super().__init__()
        self.profile = profile
        self.judge = dspy.Predict(JudgeForProfile)

    def forward(self, conversation: str, first_completion: str, second_completion: str) -> dspy.Prediction:
        answer = self.judge(user_profile=self.profile, question=conversation, answer_a=first_completion,
                            answer_b=second_completion)
        return dspy.Prediction(preference=POSITIONS[answer.choice], certainty=answer.certainty)
