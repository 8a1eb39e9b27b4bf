"""The Memory baseline: insights extracted from each past conversation, appended in order, as the judge's user
context. A conversation answered with "no insights found" adds none."""

import dspy

from prefcraft.signatures.memory import NO_INSIGHTS, ExtractInsights

MAX_INSIGHTS_PER_INTERACTION = 5


class MemoryBuilder(dspy.Module):
    def __init__(self):
        super().__init__()
        self.extract = dspy.Predict(ExtractInsights)

    def forward(self, interactions: list[dict[str, str]]) -> dspy.Prediction:
        """`interactions`: dicts with the conversation, oldest first."""
        insights = [insight for interaction in interactions for insight in self._insights(interaction)]
        return dspy.Prediction(insights=insights, memory="\n".join(f"- {insight}" for insight in insights))

    def _insights(self, interaction: dict[str, str]) -> list[str]:
        lines = (line.strip().lstrip("-*• ").strip() for line in self.extract(**interaction).insights.splitlines())
        return [line for line in lines if line and line.rstrip(".").lower() != NO_INSIGHTS][
            :MAX_INSIGHTS_PER_INTERACTION]
