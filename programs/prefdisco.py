"""PrefDisco (seeds/000): the question asker, the passive user simulator, the responder and the rubric grader.

`QuestionAsker` runs the elicitation loop: each turn one `NextTurn` call either asks a clarifying question (one or two,
as the paper allows) or stops; the user (any callable from the conversation so far, ending with the question, to a
reply) answers; after the loop one `AnswerInDialogue` call, with the reference code's final-answer instructions, writes
the personalized answer. That call sees the conversation as the reference's chat does: the user's task as the first user
turn, each question as an assistant turn and each reply as a user turn (a `dspy.History`). It never receives the hidden
profile: a `SimulatedUser` holds that, and shows only its scenario id when printed. `FixedQuestionAsker` is the paper's
Figure 5: with the reference's fixed-count prompt (`NextQuestion`) it takes exactly k turns of questions, then answers
the same way.

Temperatures that the reference code fixes are set on the predictors, over the role's setting: the user simulator
samples at 0.4, the rubric grader at 0.1 (appendix A) and the correctness check at 0.7. The reference asks its
correctness judge for 0, but its client takes `temperature or configured`, so the 0 became the judge's configured 0.7:
the paper's accuracies were judged at 0.7. `RubricGrader(correctness_temperature=GREEDY_CORRECTNESS_TEMPERATURE)`
judges at the 0 the reference asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

from prefcraft.signatures.prefdisco import (
    AnswerInDialogue,
    AnswerProblem,
    GradeCriterion,
    JudgeCorrectness,
    NextQuestion,
    NextTurn,
    ReplyAsCollaborativeUser,
    ReplyAsUser,
    SolveProblem,
)

DEFAULT_MAX_TURNS = 5
# The user's first turn in the reference's chat, in every condition (Baseline, Oracle and the asker's final answer).
TASK_MESSAGE = "I need help with the following task: {problem}"
SIMULATOR_TEMPERATURE = 0.4
GRADER_TEMPERATURE = 0.1
CORRECTNESS_TEMPERATURE = 0.7
GREEDY_CORRECTNESS_TEMPERATURE = 0.0


def format_dialogue(turns: Sequence[dict[str, str]]) -> str:
    return "\n".join(f"Assistant: {turn['question']}\nUser: {turn['reply']}" for turn in turns)


def answer_chat(problem: str, turns: Sequence[dict[str, str]]) -> dict[str, Any]:
    """The final answer's inputs: the user's latest message and the chat before it, where each of the asker's questions
    answers the user turn before it."""
    messages = [TASK_MESSAGE.format(problem=problem), *(turn["reply"] for turn in turns)]
    history = [{"message": said, "response": turn["question"]} for said, turn in zip(messages, turns, strict=False)]
    return {"message": messages[-1], "history": dspy.History(messages=history)}


def format_chat(turns: Sequence[dict[str, str]], question: str) -> str:
    """What the user reads: the dialogue so far, then the assistant's new question."""
    return "\n".join(part for part in (format_dialogue(turns), f"Assistant: {question}") if part)


def _put_question(user: Callable[[str], str], turns: list[dict[str, str]], question: str) -> None:
    """Put `question` to the user and add the exchange to `turns`."""
    turns.append({"question": question, "reply": user(format_chat(turns, question))})


def _answer_after(answer: dspy.Predict, problem: str, turns: list[dict[str, str]]) -> dspy.Prediction:
    """The asker's answer after its questions, with the dialogue it had."""
    answered = answer(**answer_chat(problem, turns))
    return dspy.Prediction(response=answered.response, final_answer=answered.final_answer, turns=turns,
                           questions_asked=len(turns))


class QuestionAsker(dspy.Module):
    """(problem, user) -> the final response, its final answer and the dialogue turns: asks until it decides to answer
    or its turn budget is spent."""

    def __init__(self, max_turns: int = DEFAULT_MAX_TURNS):
        super().__init__()
        if max_turns < 0:
            raise ValueError("the turn budget must be >= 0")
        self.next_turn = dspy.Predict(NextTurn)
        self.answer = dspy.Predict(AnswerInDialogue)
        self.max_turns = max_turns

    def forward(self, problem: str, user: Callable[[str], str]) -> dspy.Prediction:
        turns: list[dict[str, str]] = []
        while len(turns) < self.max_turns:
            step = self.next_turn(problem=problem, dialogue=format_dialogue(turns),
                                  questions_left=self.max_turns - len(turns))
            question = step.question.strip()
            if step.action == "answer" or not question:
                break
            _put_question(user, turns, question)
        return _answer_after(self.answer, problem, turns)


class FixedQuestionAsker(dspy.Module):
    """(problem, user) -> as `QuestionAsker`, after exactly `questions` turns of questions (the paper's Figure 5).

    Each turn is told to ask and which turn of how many it is, counted from 0 as the reference counts; whatever the
    model writes goes to the user, as the reference sends it, and the dialogue runs all its turns. An empty question
    fails the scenario, as the reference refuses an empty reply."""

    def __init__(self, questions: int):
        super().__init__()
        if questions < 0:
            raise ValueError("the fixed question count must be >= 0")
        self.next_question = dspy.Predict(NextQuestion)
        self.answer = dspy.Predict(AnswerInDialogue)
        self.questions = questions

    def forward(self, problem: str, user: Callable[[str], str]) -> dspy.Prediction:
        turns: list[dict[str, str]] = []
        for turn in range(self.questions):
            step = self.next_question(problem=problem, dialogue=format_dialogue(turns), turn=turn,
                                      question_count=self.questions)
            question = step.question.strip()
            if not question:
                raise ValueError(f"the asker wrote no question on turn {turn} of {self.questions}")
            _put_question(user, turns, question)
        return _answer_after(self.answer, problem, turns)


class Responder(dspy.Module):
    """One answer with what is known of the user given up front. The problem comes as the reference's user turn ("I
    need help with the following task: ..."). With nothing known (Baseline) the model gets it alone and no word of
    personalizing, as the paper's Baseline has no system prompt; with the profile (Oracle) it is told to align with
    it."""

    def __init__(self):
        super().__init__()
        self.solve = dspy.Predict(SolveProblem)
        self.answer = dspy.Predict(AnswerProblem)

    def forward(self, problem: str, user_preferences: str) -> dspy.Prediction:
        request = TASK_MESSAGE.format(problem=problem)
        if not user_preferences:
            return self.solve(problem=request)
        return self.answer(problem=request, user_preferences=user_preferences)


class UserSimulator(dspy.Module):
    """Replies to the assistant's last message from a hidden profile and the conversation so far: passively (the
    paper's default) or collaboratively."""

    def __init__(self, collaborative: bool = False):
        super().__init__()
        self.reply = dspy.Predict(ReplyAsCollaborativeUser if collaborative else ReplyAsUser,
                                  temperature=SIMULATOR_TEMPERATURE)

    def forward(self, hidden_profile: str, chat_history: str) -> dspy.Prediction:
        return self.reply(hidden_profile=hidden_profile, chat_history=chat_history)


class SimulatedUser:
    """The asker's only view of a user: call it with the conversation so far, get a reply. The profile stays inside.

    `context` opens the LM context the simulator runs in (commands pass the judge model's).
    """

    def __init__(self, scenario_id: str, hidden_profile: str, simulator: UserSimulator,
                 context: Callable[[], AbstractContextManager[Any]] = nullcontext):
        self.scenario_id = scenario_id
        self._hidden_profile = hidden_profile
        self._simulator = simulator
        self._context = context

    def __call__(self, chat_history: str) -> str:
        with self._context():
            return self._simulator(hidden_profile=self._hidden_profile, chat_history=chat_history).reply

    def __repr__(self) -> str:
        return f"SimulatedUser({self.scenario_id!r})"


class RubricGrader(dspy.Module):
    """One grade (1-5) with its justification per criterion, one call each, and one correctness call against the gold
    answer. As in the paper's judge, a criterion's call reads the criterion and the response, not the problem.

    A grade whose reply does not parse is None (PrefAlign counts it as 1, as the reference code does), its
    justification empty; a failed call still fails the grading."""

    def __init__(self, correctness_temperature: float = CORRECTNESS_TEMPERATURE):
        super().__init__()
        self.grade = dspy.Predict(GradeCriterion, temperature=GRADER_TEMPERATURE)
        self.check = dspy.Predict(JudgeCorrectness, temperature=correctness_temperature)

    def forward(self, problem: str, response: str, criteria: Sequence[str], reference_answer: str) -> dspy.Prediction:
        graded = [self._grade(criterion, response) for criterion in criteria]
        correct = bool(self.check(problem=problem, reference_answer=reference_answer, response=response).correct)
        return dspy.Prediction(grades=[grade for grade, _ in graded],
                               justifications=[justification for _, justification in graded], correct=correct)

    def _grade(self, criterion: str, response: str) -> tuple[int | None, str]:
        try:
            graded = self.grade(criterion=criterion, response=response)
        except AdapterParseError:
            return None, ""
        return int(graded.grade), graded.justification
