"""The pairwise preference judge: chain of thought over a conversation and two completions.

Without user context it is SynthesizeMe's default LLM-as-judge. With user context (a persona, memory insights or
demographics) that context becomes part of its instructions, as in the paper; demos are set by an optimizer.
"""

import dspy

from prefcraft.signatures.judge import JudgePreference

# The judge given user context (the paper's Figures 13 and 14) has instructions of its own: it is not asked for the
# default judge's one to three speculations (Figure 11), as it is told what is known of the user.
USER_CONTEXT_TEMPLATE = (
    "Given a conversation and two completions from different models, determine which completion the human judge is\n"
    "more likely to prefer. Use any provided context to speculate about the personal preferences of the judge.\n\n"
    "You are a personalized reward model for one user. {heading}:\n===\n{context}\n===\n"
    "Given the conversation and the two completions, decide which completion this user is more likely to prefer, "
    "keeping\nwhat you know about them in mind."
)


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
