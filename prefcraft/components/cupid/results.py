"""What CUPID's steps return: per-instance and per-response results, and the outcomes the report formats."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefcraft.components.cupid.metrics import MatchReport, ResponseScores
from prefcraft.engine.evaluation import StepCost
from prefcraft.metrics.stats import Estimate
from prefcraft.optimizers.compile_selection import CompileOutcome

UNPARSEABLE_SCORE = "unparseable score"
"""A response whose judge reply parsed but gave no 1-10 number: scored 0, as the reference scores it."""


@dataclass
class InstanceResult:
    instance_id: str
    instance_type: str
    preference: str | None
    used_sessions: list[int] | None
    checklist: list[str] | None
    predicted_coverage: list[float]
    true_coverage: list[float]
    precision: float | None
    recall: float | None
    f1: float | None
    """None where the instance is left out of the scores."""
    missing_labels: int
    failed: str | None
    """None, or the step that failed: "inference" or "decomposition" (left out of the scores, but for a prompt over
    the context window under the reference's rule: scored with an empty checklist), or "matching" (scored with every
    item Not covered)."""
    reason: str | None = None
    """Why that step failed (`prefcraft.engine.item_failures.failure_reason`), e.g. "context_window_exceeded: ..."."""


@dataclass
class InferenceOutcome:
    name: str
    overall: MatchReport
    by_type: dict[str, MatchReport]
    results: list[InstanceResult]
    costs: dict[str, StepCost]


@dataclass
class ResponseResult:
    instance_id: str
    instance_type: str
    method: str
    response: str | None
    score: float | None
    """The judge's 1-10 as read by `judge_score` (0 when unparseable, when judging failed, or, under the reference's
    rule, when the generation's prompt was over the context window), or None when the response is left out."""
    failed: str | None = None
    """None, or what failed: "generation", "judging" or UNPARSEABLE_SCORE."""
    reason: str | None = None
    """Why generation or judging failed (`prefcraft.engine.item_failures.failure_reason`), e.g.
    "context_window_exceeded: ..."."""


@dataclass
class ResponseOutcome:
    method: str
    overall: ResponseScores
    """Mean judge score (1-10) with its interval, and the failures counted as the reference counts them."""
    by_type: dict[str, ResponseScores]
    """The same, over each instance type's responses (Table 3's Consistent, Contrastive and Changing columns)."""
    results: list[ResponseResult]
    costs: dict[str, StepCost]

    @property
    def score(self) -> Estimate:
        return self.overall.score


@dataclass
class EvaluationOutcome:
    data: str
    instances: int
    skipped: int
    split: str
    inference: list[InferenceOutcome]
    responses: list[ResponseOutcome]
    results_dir: Path
    oracle_left_out: int | None = None
    """In the oracle setting, the instances left out because no prior session shares their current preference; None
    outside it."""
    judge_prompt: str = "reference"
    """The response judge's prompt: the reference code's, or the paper's Figure 16."""
    context_overflow: str = "zero"
    """How an instance whose prompt was over the context window counts: "zero" (the reference's) or "leave-out"."""

    @property
    def failed_items(self) -> int:
        """Inferences and responses whose call failed (each with its reason), scored as the reference scores them or
        left out; a judge's reply that parsed but gave no number is scored 0 and is no failed call."""
        return (sum(result.failed is not None for outcome in self.inference for result in outcome.results)
                + sum(result.failed not in (None, UNPARSEABLE_SCORE)
                      for outcome in self.responses for result in outcome.results))


@dataclass(frozen=True)
class CupidCompileOutcome(CompileOutcome):
    inferrer: str
