"""What `prefcraft prefdisco evaluate` returns: each response's result, each condition's summary, and the outcome."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefcraft.components.prefdisco.metrics import NormAlignSummary
from prefcraft.engine.evaluation import StepCost
from prefcraft.metrics.stats import Estimate


@dataclass
class ConditionResult:
    scenario_id: str
    task: str
    condition: str
    response: str | None
    final_answer: str | None
    turns: list[dict[str, str]]
    hidden_profile: str
    grades: list[int | None] | None
    """One per criterion; None for a criterion the grader gave no grade (counted as 1 in PrefAlign)."""
    justifications: list[str] | None
    correct: bool | None
    pref_align: float | None
    failed: str | None
    """None, or the step that failed: "generation" or "grading"."""
    missing_grades: int = 0
    failure: str | None = None
    """Why that step failed (`prefcraft.engine.item_failures.failure_reason`: its kind, then its message: a server
    error, a reply cut short or that did not parse);
    None when it did not fail, or when the error was not recorded."""

    def score(self) -> ResponseScore:
        return ResponseScore(self.scenario_id, self.task, self.pref_align, self.correct, self.failed, len(self.turns),
                             self.missing_grades)


@dataclass(frozen=True)
class ResponseScore:
    """What the summary reads of a ConditionResult; the rest goes to the results file and is not kept."""

    scenario_id: str
    task: str
    pref_align: float | None
    correct: bool | None
    failed: str | None
    questions: int
    missing_grades: int = 0


@dataclass
class ConditionSummary:
    task: str
    condition: str
    pref_align: Estimate
    accuracy: Estimate
    questions: float
    """Questions asked per dialogue, over the dialogues that were generated (NaN when none was)."""
    failures: int
    missing_grades: int
    """Criteria without a grade in the scored responses, each counted as 1 in PrefAlign."""
    norm_align: NormAlignSummary | None
    negative_tasks: tuple[int, int] | None = None
    """Over all tasks (the "all" row): (tasks whose NormAlign of means is negative, tasks where it is defined)."""


@dataclass
class EvaluationOutcome:
    scenarios: int
    split: str
    summaries: list[ConditionSummary]
    costs: dict[str, dict[str, StepCost]]
    results_path: Path
    failed_items: int = 0
    """Responses (a scenario under one condition) whose generation or grading failed."""
