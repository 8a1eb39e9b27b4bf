"""PrefDisco (seeds/000): a question-asking assistant, a passive user simulator and a per-attribute rubric grader.

The asker's signatures (NextTurn, AnswerProblem) read the problem and the dialogue only, never the hidden profile; the
simulator and the graders read it. Grades are the paper's 1-5 scale. Field order is part of every compiled JSON: never
reorder these fields.
"""

from typing import Literal

import dspy
from pydantic import BaseModel

Grade = Literal[1, 2, 3, 4, 5]


class PreferenceEstimate(BaseModel):
    """One entry of the asker's running estimate of the user's profile."""

    attribute: str
    value: str
    weight: Literal[1, 2, 3, 4, 5]


class NextTurn(dspy.Signature):
    """You are helping a user with a problem. Before answering, you may ask the user clarifying questions about
    how they like answers (level of detail, style, background knowledge), one question per turn. Update what you know
    about their preferences from the dialogue, then either ask one new question or decide to answer."""

    problem: str = dspy.InputField(desc="the user's problem")
    dialogue: str = dspy.InputField(desc="your questions and the user's replies so far (empty at first)")
    questions_left: int = dspy.InputField(desc="how many more questions you may ask")
    preferences: list[PreferenceEstimate] = dspy.OutputField(
        desc="what you know so far of the user's preferences: attribute, value, importance 1-5"
    )
    action: Literal["ask", "answer"] = dspy.OutputField(desc="'ask' one more question, or 'answer' now")
    question: str = dspy.OutputField(desc="your one question when asking, else empty")


class AnswerProblem(dspy.Signature):
    """Solve the user's problem and write your answer for this user, following what you know of their preferences.
    End with the final answer on its own."""

    problem: str = dspy.InputField(desc="the user's problem")
    user_preferences: str = dspy.InputField(desc="what you know of the user's preferences (may be empty)")
    response: str = dspy.OutputField(desc="your personalized answer to the user")
    final_answer: str = dspy.OutputField(desc="the final answer alone, e.g. a number or an option letter")


class ReplyAsUser(dspy.Signature):
    """You are the user described by the hidden profile, talking to an assistant about a problem. Answer the
    assistant's question factually and minimally, from your profile. Reveal nothing that was not asked; if the profile
    does not cover the question, say you have no preference."""

    hidden_profile: str = dspy.InputField(desc="your preferences: attribute, your value for it")
    question: str = dspy.InputField(desc="the assistant's question")
    reply: str = dspy.OutputField(desc="your reply")


COLLABORATIVE_USER = """You are the user described by the hidden profile, talking to an assistant about a problem.
Answer the assistant's question helpfully from your profile, and mention the one other preference from your profile
that matters most for this problem."""


class GradeCriterion(dspy.Signature):
    """Grade how well a response to a problem meets one preference of the user, on a scale from 1 (ignores or
    contradicts it) to 5 (fully meets it), using the rubric levels."""

    problem: str = dspy.InputField(desc="the problem the response answers")
    criterion: str = dspy.InputField(desc="the preference, the user's value for it, and the rubric's levels")
    response: str = dspy.InputField(desc="the response to grade")
    grade: Grade = dspy.OutputField(desc="1 to 5")


class JudgeCorrectness(dspy.Signature):
    """Decide whether the response reaches the same final answer as the reference answer (wording may differ)."""

    problem: str = dspy.InputField(desc="the problem")
    reference_answer: str = dspy.InputField(desc="the correct answer")
    response: str = dspy.InputField(desc="the response to check")
    correct: bool = dspy.OutputField(desc="true when the response's final answer matches the reference answer")
