"""CUPID (seeds/001): the contextual preference inferrer, the response generator and the graders that score them.

`PreferenceInferrer` reads only dialogues and the current request. Its variants, chosen by name:
- "relevant": first pick the prior sessions relevant to the request, then infer from those alone (the paper's oracle
  with relevant sessions gains 20-30 F1 points over all sessions);
- "summaries": first summarise the log, in one call, into each session's user context and the preferences the user
  showed in it, then infer from the summaries (the paper's interaction-summary setting, Figure 23);
- "summaries-per-session": the same summaries written one call per session, so that each call holds a single dialogue
  and a single summary: for a model whose context window or token budget cannot hold the whole log and all of its
  summaries (the embedded model's 4,096-token slot), and summaries that can be kept per session;
- "all": infer from every session at once (the paper's zero-shot baseline).
`PreferenceMatch` is the metric's program: it decomposes the inferred preference into a checklist and runs the matcher
twice (inferred checklist against the gold preference: precision; gold checklist against the inferred preference:
recall). `ResponseGenerator` answers with no user context, the prior sessions, or a preference; `SummaryResponder`
answers from the sessions' summaries (the paper's generation with summaries, Table 10); `ResponseJudge` scores a
response 1-10 against the gold preference and checklist, with the reference code's prompt or the paper's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import dspy

from prefcraft.signatures.cupid import (
    DecomposePreference,
    GenerateResponse,
    InferPreference,
    JudgeResponse,
    JudgeResponseFigure16,
    MatchChecklist,
    SelectRelevantSessions,
    SummarizeSession,
    SummarizeSessions,
)

InferrerVariant = Literal["relevant", "summaries", "summaries-per-session", "all"]
INFERRER_VARIANTS: tuple[str, ...] = get_args(InferrerVariant)
JudgePrompt = Literal["reference", "paper"]
JUDGE_PROMPTS: dict[str, type[dspy.Signature]] = {"reference": JudgeResponse, "paper": JudgeResponseFigure16}

COVERAGE = {"Fully": 1.0, "Partially": 0.5, "Not": 0.0}
DECOMPOSER_MAX_TOKENS = 4096
"""The reference's cap on a decomposer reply (kixlab/CUPID synthesis/modules/preference_decomposer.py:13), half the
8,192 of its matcher and judge, which share the decomposer's judge model here."""


@dataclass(frozen=True)
class ChecklistMatch:
    """One instance's coverage values; an empty inferred checklist scores precision 0 (nothing correct was said)."""

    predicted_coverage: list[float]
    true_coverage: list[float]
    missing_labels: int = 0
    """Checklist items the matcher gave no label (scored Not covered)."""

    @classmethod
    def unmatched(cls, inferred_items: int, gold_items: int) -> ChecklistMatch:
        """A failed matcher call: every inferred and gold item Not covered, all of them still counted."""
        return cls([0.0] * inferred_items, [0.0] * gold_items)

    @property
    def precision(self) -> float:
        return sum(self.predicted_coverage) / len(self.predicted_coverage) if self.predicted_coverage else 0.0

    @property
    def recall(self) -> float:
        return sum(self.true_coverage) / len(self.true_coverage) if self.true_coverage else 0.0

    @property
    def f1(self) -> float:
        return harmonic_mean(self.precision, self.recall)


def harmonic_mean(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def number_sessions(sessions: Sequence[str], numbers: Sequence[int] | None = None) -> str:
    """Sessions as one text, each under its 1-based number (`numbers` keeps only those sessions, in order)."""
    chosen = range(1, len(sessions) + 1) if numbers is None else sorted(set(numbers))
    return _numbered((number, sessions[number - 1]) for number in chosen)


def _numbered(texts: Iterable[tuple[int, str]]) -> str:
    return "\n\n".join(f"Session {number}:\n{text}" for number, text in texts)


def _summary_text(context: str, preferences: str) -> str:
    return f"Context:\n{context}\nPreferences:\n{preferences}"


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def summarize_log(summarize: dspy.Predict, sessions: list[str]) -> str:
    """The prior sessions as numbered summaries of context and preferences, written by `summarize`: one call over the
    whole log (`SummarizeSessions`, the paper's) or one call per session (`SummarizeSession`)."""
    if "dialogue" in summarize.signature.input_fields:  # SummarizeSession, its instructions perhaps compiled
        summaries = [summarize(dialogue=session) for session in sessions]
        return number_sessions([_summary_text(summary.context, summary.preference) for summary in summaries])
    summaries = summarize(sessions=number_sessions(sessions)).summaries
    return _numbered((summary.session, _summary_text(_bullets(summary.context), _bullets(summary.preferences)))
                     for summary in summaries)


def _summarizer(per_session: bool) -> dspy.Predict:
    return dspy.Predict(SummarizeSession if per_session else SummarizeSessions)


def number_items(items: Sequence[str]) -> str:
    return "\n".join(f"{number}. {item}" for number, item in enumerate(items, 1))


class PreferenceInferrer(dspy.Module):
    """Prior sessions (dialogue texts, oldest first) + the current request -> `preference`, one sentence."""

    def __init__(self, variant: InferrerVariant = "all"):
        super().__init__()
        if variant not in INFERRER_VARIANTS:
            raise ValueError(f"unknown inferrer variant {variant!r}: choose one of {', '.join(INFERRER_VARIANTS)}")
        self.variant = variant
        if variant == "relevant":
            self.select = dspy.Predict(SelectRelevantSessions)
        if variant in ("summaries", "summaries-per-session"):
            self.summarize = _summarizer(per_session=variant == "summaries-per-session")
        self.infer = dspy.Predict(InferPreference)

    def forward(self, sessions: Sequence[str], current_request: str) -> dspy.Prediction:
        if not sessions:
            raise ValueError("PreferenceInferrer needs at least one prior session")
        evidence, used = self._evidence(list(sessions), current_request)
        preference = self.infer(sessions=evidence, current_request=current_request).preference
        return dspy.Prediction(preference=preference, used_sessions=used)

    def _evidence(self, sessions: list[str], current_request: str) -> tuple[str, list[int]]:
        every = list(range(1, len(sessions) + 1))
        if self.variant == "relevant":
            picked = self.select(sessions=number_sessions(sessions), current_request=current_request).relevant_sessions
            valid = sorted({number for number in picked if number <= len(sessions)}) or every
            return number_sessions(sessions, valid), valid
        if self.variant in ("summaries", "summaries-per-session"):
            return summarize_log(self.summarize, sessions), every
        return number_sessions(sessions), every


def decomposer(max_tokens: int | None = None) -> dspy.Predict:
    """The decomposer, its replies capped at `max_tokens` (None: the model's own `max_tokens`)."""
    return dspy.Predict(DecomposePreference, **({} if max_tokens is None else {"max_tokens": max_tokens}))


class PreferenceMatch(dspy.Module):
    """(inferred preference, gold preference, gold checklist) -> ChecklistMatch: the decomposer once (its replies
    capped at `decompose_max_tokens`), the matcher twice.

    A matcher reply with fewer labels than entries leaves the rest Not covered (and counts them as `missing_labels`).
    """

    def __init__(self, decompose_max_tokens: int | None = None):
        super().__init__()
        self.decompose = decomposer(decompose_max_tokens)
        self.match = dspy.Predict(MatchChecklist)

    def forward(self, preference: str, gold_preference: str, gold_checklist: Sequence[str]) -> dspy.Prediction:
        checklist = [item for item in self.decompose(preference=preference).checklist if item.strip()]
        predicted, missing_predicted = self._coverage(checklist, gold_preference)
        # An empty inferred checklist covers no gold item: the reference scores it so without asking the matcher.
        true, missing_true = (self._coverage(list(gold_checklist), preference) if checklist
                              else ([0.0] * len(gold_checklist), 0))
        match = ChecklistMatch(predicted_coverage=predicted, true_coverage=true,
                               missing_labels=missing_predicted + missing_true)
        return dspy.Prediction(checklist=checklist, match=match)

    def _coverage(self, checklist: list[str], preference: str) -> tuple[list[float], int]:
        if not checklist:
            return [], 0
        labels = self.match(checklist=number_items(checklist), preference=preference).coverage[: len(checklist)]
        missing = len(checklist) - len(labels)
        return [COVERAGE[label] for label in labels] + [0.0] * missing, missing


class ResponseGenerator(dspy.Module):
    """A response to the request, given no user context, the prior sessions, or a preference."""

    def __init__(self):
        super().__init__()
        self.generate = dspy.Predict(GenerateResponse)

    def forward(self, request: str, sessions: Sequence[str] = (), preference: str = "") -> dspy.Prediction:
        if sessions and preference:
            raise ValueError("give the generator the prior sessions or a preference, not both")
        if sessions:
            user_context = "The user's past sessions:\n" + number_sessions(list(sessions))
        elif preference:
            user_context = f"The user's preference for this request: {preference}"
        else:
            user_context = ""
        return self.generate(user_context=user_context, request=request)


class SummaryResponder(dspy.Module):
    """A response to the request written from the summaries of the prior sessions: first the log summarised (as the
    `summaries` inferrer does, or one call per session), then the generator given those summaries."""

    def __init__(self, per_session: bool = False):
        super().__init__()
        self.summarize = _summarizer(per_session)
        self.generate = dspy.Predict(GenerateResponse)

    def forward(self, request: str, sessions: Sequence[str]) -> dspy.Prediction:
        if not sessions:
            raise ValueError("SummaryResponder needs at least one prior session")
        summaries = summarize_log(self.summarize, list(sessions))
        return self.generate(user_context="Summaries of the user's past sessions:\n" + summaries, request=request)


class ResponseJudge(dspy.Module):
    """(request, response, gold preference, gold checklist) -> `score`, 1-10. `prompt`: the reference code's (a label
    for each score, given before the score) or the paper's Figure 16 (no labels)."""

    def __init__(self, prompt: JudgePrompt = "reference"):
        super().__init__()
        if prompt not in JUDGE_PROMPTS:
            raise ValueError(f"unknown judge prompt {prompt!r}: choose one of {', '.join(JUDGE_PROMPTS)}")
        self.judge = dspy.Predict(JUDGE_PROMPTS[prompt])

    def forward(self, request: str, response: str, preference: str, checklist: Sequence[str]) -> dspy.Prediction:
        return self.judge(request=request, response=response, preference=preference, checklist=number_items(checklist))
