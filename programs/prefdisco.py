"""PrefDisco (seeds/000): the question asker, the passive user simulator, the responder and the rubric grader.

`QuestionAsker` runs the elicitation loop: each turn one `NextTurn` call updates its estimate of the user's profile
and either asks one question or stops; the user (any callable from question to reply) answers; after the loop one
`AnswerProblem` call writes the personalized answer from the dialogue and the estimate. It never receives the hidden
profile: a `SimulatedUser` holds that, and shows only its scenario id when printed. `forced_questions=k` asks exactly
k questions whatever the asker decides (the paper's Figure 5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from prefcraft.signatures.prefdisco import (
    COLLABORATIVE_USER,
    AnswerProblem,
    GradeCriterion,
    JudgeCorrectness,
    NextTurn,
    ReplyAsUser,
)

DEFAULT_MAX_TURNS = 5
FALLBACK_QUESTION = "How would you like me to write the answer for you?"


def format_dialogue(turns: Sequence[dict[str, str]]) -> str:
    return "\n".join(f"Assistant: {turn['question']}\nUser: {turn['reply']}" for turn in turns)


def format_estimate(preferences: Sequence[Any]) -> str:
    return "\n".join(f"- {p.attribute}: {p.value} (importance {p.weight})" for p in preferences)


class QuestionAsker(dspy.Module):
    """(problem, user) -> the final response, its final answer, the dialogue turns and the profile estimate."""

    def __init__(self, max_turns: int = DEFAULT_MAX_TURNS, forced_questions: int | None = None):
        super().__init__()
        if max_turns < 0 or (forced_questions is not None and forced_questions < 0):
            raise ValueError("the turn budget and the forced question count must be >= 0")
        self.next_turn = dspy.Predict(NextTurn)
        self.answer = dspy.Predict(AnswerProblem)
        self.max_turns = max_turns
        self.forced_questions = forced_questions

    def forward(self, problem: str, user: Callable[[str], str]) -> dspy.Prediction:
        budget = self.max_turns if self.forced_questions is None else self.forced_questions
        turns: list[dict[str, str]] = []
        estimate: list[Any] = []
        while len(turns) < budget:
            step = self.next_turn(problem=problem, dialogue=format_dialogue(turns), questions_left=budget - len(turns))
            estimate = list(step.preferences)
            question = step.question.strip()
            if self.forced_questions is None and (step.action == "answer" or not question):
                break
            question = question or FALLBACK_QUESTION
            turns.append({"question": question, "reply": user(question)})
        known = "\n".join(part for part in (format_estimate(estimate), format_dialogue(turns)) if part)
        answer = self.answer(problem=problem, user_preferences=known)
        return dspy.Prediction(response=answer.response, final_answer=answer.final_answer, turns=turns,
                               preferences=[p.model_dump() for p in estimate], questions_asked=len(turns))


class Responder(dspy.Module):
    """One answer with what is known of the user given up front: nothing (Baseline) or the profile (Oracle)."""

    def __init__(self):
        super().__init__()
        self.answer = dspy.Predict(AnswerProblem)

    def forward(self, problem: str, user_preferences: str) -> dspy.Prediction:
        return self.answer(problem=problem, user_preferences=user_preferences)


class UserSimulator(dspy.Module):
    """Replies to one question from a hidden profile: passively (the paper's default) or collaboratively."""

    def __init__(self, collaborative: bool = False):
        super().__init__()
        self.reply = dspy.Predict(ReplyAsUser)
        if collaborative:
            self.reply.signature = self.reply.signature.with_instructions(COLLABORATIVE_USER)

    def forward(self, hidden_profile: str, question: str) -> dspy.Prediction:
        return self.reply(hidden_profile=hidden_profile, question=question)


class SimulatedUser:
    """The asker's only view of a user: call it with a question, get a reply. The profile stays inside.

    `context` opens the LM context the simulator runs in (commands pass the judge model's).
    """

    def __init__(self, scenario_id: str, hidden_profile: str, simulator: UserSimulator,
                 context: Callable[[], AbstractContextManager[Any]] = nullcontext):
        self.scenario_id = scenario_id
        self._hidden_profile = hidden_profile
        self._simulator = simulator
        self._context = context

    def __call__(self, question: str) -> str:
        with self._context():
            return self._simulator(hidden_profile=self._hidden_profile, question=question).reply

    def __repr__(self) -> str:
        return f"SimulatedUser({self.scenario_id!r})"


class RubricGrader(dspy.Module):
    """One grade (1-5) per criterion, one call each, and one correctness call against the gold answer.

    A grade whose reply does not parse is None (PrefAlign counts it as 1, as the reference code does); a failed call
    still fails the grading."""

    def __init__(self):
        super().__init__()
        self.grade = dspy.Predict(GradeCriterion)
        self.check = dspy.Predict(JudgeCorrectness)

    def forward(self, problem: str, response: str, criteria: Sequence[str], reference_answer: str) -> dspy.Prediction:
        grades = [self._grade(problem, criterion, response) for criterion in criteria]
        correct = bool(self.check(problem=problem, reference_answer=reference_answer, response=response).correct)
        return dspy.Prediction(grades=grades, correct=correct)

    def _grade(self, problem: str, criterion: str, response: str) -> int | None:
        try:
            return int(self.grade(problem=problem, criterion=criterion, response=response).grade)
        except AdapterParseError:
            return None
