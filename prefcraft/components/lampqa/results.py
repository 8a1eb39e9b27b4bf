"""What `prefcraft lampqa evaluate` returns: each method's scores, results and cost, for the report and the caller."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefcraft.components.lampqa.metrics import MethodReport, QuestionResult
from prefcraft.engine.evaluation import StepCost
from prefcraft.metrics.stats import Estimate

BASELINE = "baseline"


@dataclass
class MethodOutcome:
    name: str
    report: MethodReport
    results: list[QuestionResult]
    cost: dict[str, StepCost]
    coverage: Estimate | None = None
    gain: float = float("nan")
    """The overall score's relative gain over the `BASELINE` method's (NaN when that method did not run or scored 0)."""


@dataclass
class EvaluationOutcome:
    split: str
    questions: int
    skipped_posts: int
    methods: dict[str, MethodOutcome]
    compiled: Path | None
    empty_profiles: int = 0
    """Questions answered without past posts: their profile had none with text."""

    @property
    def failed_items(self) -> int:
        """Answers (a question under one method) whose answer or a judgment of it failed."""
        return sum(result.answer_failed or any(result.judge_failures)
                   for method in self.methods.values() for result in method.results)
