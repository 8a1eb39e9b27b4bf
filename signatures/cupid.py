"""CUPID (seeds/001): inferring a user's contextual preference from prior sessions, and the graders that score it.

Inference sees only dialogues and the current request; the decomposer, matcher and judge are graders that read gold
preferences and checklists. The bounds here are the paper's: a preference of one sentence of at most 30 words, and
checklists of at most 4 items. Field order is part of every compiled JSON: never reorder these fields.
"""

from typing import Annotated, Literal

import dspy
from pydantic import Field

MAX_SESSION_NUMBER = 16
MAX_CHECKLIST_ITEMS = 4
Coverage = Literal["Fully", "Partially", "Not"]
SessionNumber = Annotated[int, Field(ge=1, le=MAX_SESSION_NUMBER)]


class SelectRelevantSessions(dspy.Signature):
    """You see numbered past sessions between a user and an AI assistant, then the user's current request. Pick the
    sessions whose situation is most similar to the current request, where the user's feedback shows what they expect
    in that situation."""

    sessions: str = dspy.InputField(desc="the numbered past sessions, oldest first")
    current_request: str = dspy.InputField(desc="the user's current request")
    relevant_sessions: list[SessionNumber] = dspy.OutputField(desc="numbers of the most relevant sessions")


class SummarizeSession(dspy.Signature):
    """Read one past session between a user and an AI assistant. From the user's feedback, state in one sentence what
    the user expected of the assistant in that situation."""

    dialogue: str = dspy.InputField(desc="the session's messages")
    preference: str = dspy.OutputField(desc="the user's expectation in one sentence")


class InferPreference(dspy.Signature):
    """You see past sessions between a user and an AI assistant, oldest first, then the user's current request. Infer
    the preference the user will hold for the current request but did not state in it: a guideline or requirement the
    assistant must follow to satisfy them. Prefer what the user asked for in similar situations, and their latest
    feedback when it changed. Answer in one sentence of at most 30 words; avoid details you are unsure of."""

    sessions: str = dspy.InputField(desc="past sessions (or what the user expected in each), oldest first")
    current_request: str = dspy.InputField(desc="the user's current request")
    preference: str = dspy.OutputField(
        desc="the user's most likely preference for this request, one sentence, at most 30 words"
    )


class DecomposePreference(dspy.Signature):
    """Turn a user's preference about AI responses into an evaluation checklist: questions answerable by yes or no,
    yes meaning the response met that part of the preference. Cover only what the preference states, at most 4
    questions."""

    preference: str = dspy.InputField(desc="the user's preference")
    checklist: list[str] = dspy.OutputField(desc="yes/no questions, at most 4", max_length=MAX_CHECKLIST_ITEMS)


class MatchChecklist(dspy.Signature):
    """Decide whether each numbered checklist entry is covered by the preference: judging a response on the preference
    would judge the same aspect as the entry, whatever the wording. Fully: the preference covers the entry. Partially:
    it covers some of it. Not: it does not cover it. Give one label per entry, in order."""

    checklist: str = dspy.InputField(desc="the numbered checklist entries")
    preference: str = dspy.InputField(desc="the preference")
    coverage: list[Coverage] = dspy.OutputField(
        desc="one label per entry, in the entries' order", max_length=MAX_CHECKLIST_ITEMS
    )


class GenerateResponse(dspy.Signature):
    """Answer the user's request helpfully. Use what you know about the user (their past sessions or
    their preference, when given) to meet their expectations. Return only the response to the user."""

    user_context: str = dspy.InputField(desc="what is known about the user; may be empty")
    request: str = dspy.InputField(desc="the user's request")
    response: str = dspy.OutputField(desc="the response to the user")


class JudgeResponse(dspy.Signature):
    """You are a strict evaluator. Judge how well the AI assistant's response satisfies the user's personal
    preference, going through the evaluation checklist item by item and ignoring anything outside it. Score from 1
    (very poor) to 10 (every checklist item met)."""

    request: str = dspy.InputField(desc="the user's request")
    response: str = dspy.InputField(desc="the AI assistant's response")
    preference: str = dspy.InputField(desc="the user's preference")
    checklist: str = dspy.InputField(desc="the preference as yes/no checklist items")
    score: Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10] = dspy.OutputField(desc="how well the response meets the preference")
