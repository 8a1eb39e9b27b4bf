"""What SenseJudge's steps return: the simulation's summary, the selection's outcome and the evaluation's outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prefcraft.metrics.pairwise import PairwiseReport
from prefcraft.metrics.ranking import RankCorrelation
from prefcraft.metrics.stats import Estimate
from prefcraft.optimizers.sensejudge import SubsetSelectionRecord
from prefcraft.usage import LMUsage


@dataclass
class SimulationSummary:
    path: Path
    dev_pairs: int
    test_pairs: int
    dialogues: list[int]
    """File positions of the dialogues used, dev ones first."""
    replaced_dialogues: int = 0
    failed_responses: int = 0
    failed_labels: int = 0
    identical_pairs: int = 0
    usage: dict[str, LMUsage] = field(default_factory=lambda: {"responses": LMUsage(), "labels": LMUsage()})


@dataclass
class SelectionOutcome:
    path: Path
    descriptions: list[str]
    record: SubsetSelectionRecord
    usage: dict[str, LMUsage]


@dataclass
class JudgeRow:
    """One judge's test results: a single description, or the selected subset's majority vote."""

    name: str
    report: PairwiseReport
    first_position: Estimate


@dataclass
class RankingOutcome:
    judge_wins: dict[str, float]
    judge_bradley_terry: dict[str, float]
    reference: dict[str, float]
    reference_source: str
    by_wins: RankCorrelation
    by_bradley_terry: RankCorrelation


@dataclass
class EvaluationOutcome:
    rows: list[JudgeRow]
    selected: JudgeRow
    tied_best_accuracy: float
    tied_best_subsets: int
    ranking: RankingOutcome
    labels: str
    usage: dict[str, LMUsage]
