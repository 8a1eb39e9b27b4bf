"""LaMP-QA (seeds/003): personalized long-form answers, the aspect planner of PlanPers, and the aspect judge.

The answerers and the planner see only the question and the user's retrieved past posts; the question's narrative and
rubric aspects are gold and reach only `JudgeAspect`. The instructions follow the paper's prompts (Figures 12-15),
shortened. Field order is part of every compiled JSON: never reorder these fields.
"""

from typing import Literal

import dspy
from pydantic import BaseModel, Field

from prefcraft.engine.small_model import small_model_bounds

AspectScore = Literal[0, 1, 2]


class PlannedAspect(BaseModel):
    """One aspect the user expects in the answer."""

    title: str = Field(description="a title for the aspect")
    reason: str = Field(description="why it matters to this user")


class AnswerQuestion(dspy.Signature):
    """You are a helpful assistant. Answer the user's question."""

    question: str = dspy.InputField(desc="the user's question")
    answer: str = dspy.OutputField(desc="the answer")


class AnswerWithProfile(dspy.Signature):
    """You are a helpful assistant. Answer the user's question in a personalized way: learn what the user cares
    about from their past questions and descriptions."""

    profile: str = dspy.InputField(desc="the user's past questions and descriptions most related to this question")
    question: str = dspy.InputField(desc="the user's current question")
    answer: str = dspy.OutputField(desc="the personalized answer")


class PlanAspects(dspy.Signature):
    """List the aspects this user expects to see in an answer to their question, judging from their past questions
    and descriptions: for each, a title and why it matters to this user."""

    profile: str = dspy.InputField(desc="the user's past questions and descriptions most related to this question")
    question: str = dspy.InputField(desc="the user's current question")
    aspects: list[PlannedAspect] = dspy.OutputField(desc="the aspects the user expects")


class AnswerWithPlan(dspy.Signature):
    """You are a helpful assistant. Answer the user's question in a personalized way: learn what the user cares
    about from their past questions and descriptions, and cover each aspect the user expects in the answer."""

    profile: str = dspy.InputField(desc="the user's past questions and descriptions most related to this question")
    question: str = dspy.InputField(desc="the user's current question")
    plan: str = dspy.InputField(desc="the aspects the user expects to see in the answer")
    answer: str = dspy.OutputField(desc="the personalized answer")


class JudgeAspect(dspy.Signature):
    """You are a fair judge. Given a user's question, the details of what they need, a generated response and one
    aspect that is important to the user, score how well the response addresses that aspect: 0 the response does not
    cover it, 1 it somewhat covers it, 2 it covers it very well."""

    question: str = dspy.InputField(desc="the question the user asked")
    details: str = dspy.InputField(desc="the user's detailed explanation of the question")
    response: str = dspy.InputField(desc="the generated response to the question")
    aspect: str = dspy.InputField(desc="the aspect: its title, why it matters to the user, and the evidence")
    match_score: AspectScore = dspy.OutputField(desc="0, 1 or 2")


# The small-model profile's bounds of these fields (prefcraft/engine/small_model.py): what the embedded 135M model
# needs so that no call runs to its token budget. They apply only with the profile on; a paper-scale model gets none
# of them.
small_model_bounds(AnswerQuestion, chars={"answer": 600})
small_model_bounds(AnswerWithProfile, chars={"answer": 600})
small_model_bounds(AnswerWithPlan, chars={"answer": 400})
small_model_bounds(PlannedAspect, chars={"title": 60, "reason": 60})
small_model_bounds(PlanAspects, items={"aspects": 4})  # LaMP-QA's plan size
