"""What SenseJudge's steps return: the simulation's summary, the selection's outcome, the evaluation's outcome, and
the demo's three."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prefcraft.metrics.pairwise import PairwiseReport
from prefcraft.metrics.ranking import RankCorrelation
from prefcraft.metrics.stats import Estimate
from prefcraft.optimizers.sensejudge import SubsetSelectionRecord, TopicSelection
from prefcraft.usage import LMUsage


@dataclass
class SimulationSummary:
    path: Path
    dev_pairs: int
    test_pairs: int
    dialogues: list[int]
    """File positions of the dialogues used, in the order they were simulated (each topic's dev ones first)."""
    topics: dict[str, list[int]] = field(default_factory=dict)
    """Each topic's dev and test pairs."""
    replaced_dialogues: int = 0
    failed_responses: int = 0
    failed_labels: int = 0
    identical_pairs: int = 0
    usage: dict[str, LMUsage] = field(default_factory=lambda: {"responses": LMUsage(), "labels": LMUsage()})


@dataclass
class SelectionOutcome:
    path: Path
    scope: str
    """"topic": each topic's descriptions written and selected on its own dev pairs; "all": once over every one."""
    topics: dict[str, TopicSelection]
    """Each topic's selection; one, named `ALL_TOPICS`, when selected over all pairs."""
    usage: dict[str, LMUsage]

    @property
    def dev_accuracy(self) -> float:
        """The mean of the topics' dev accuracies (each over both orders of the topic's dev pairs)."""
        return mean_of(record.accuracy for record in self.records.values())

    @property
    def records(self) -> dict[str, SubsetSelectionRecord]:
        return {topic: selection.judge.selection for topic, selection in self.topics.items()}


@dataclass
class JudgeRow:
    """One judge's test results: a single description (in each topic, that topic's description at its position), or
    the selected subsets' majority vote."""

    name: str
    report: PairwiseReport
    """Over every test judgment, all topics pooled."""
    first_position: Estimate
    topics: dict[str, float]
    """Accuracy (both orders) on each topic's test pairs; a description position a topic lacks (it had fewer dev
    pairs) leaves that topic out."""

    @property
    def overall(self) -> float:
        """The paper's Overall (Table 1): the unweighted mean of the topics' accuracies."""
        return mean_of(self.topics.values())


@dataclass
class RankingOutcome:
    judge: str
    """Which judge decided the comparisons: the paper's random descriptions per topic, or the selected judge."""
    judge_wins: dict[str, float]
    judge_bradley_terry: dict[str, float]
    reference: dict[str, float]
    reference_source: str
    by_wins: RankCorrelation
    by_bradley_terry: RankCorrelation
    drawn: dict[str, list[str]] = field(default_factory=dict)
    """The paper's judge: the names of the descriptions drawn in each topic (all of them where it has fewer)."""


@dataclass
class EvaluationOutcome:
    scope: str
    rows: list[JudgeRow]
    selected: JudgeRow
    tied_best: dict[str, float]
    """Each selection's (topic's) test accuracy averaged over its dev-tied-best subsets: the reference's score."""
    tied_best_subsets: int
    ranking: RankingOutcome | None
    """None where the labelled pairs do not name the response models (SenseBench's human labels)."""
    labels: str
    usage: dict[str, LMUsage]

    @property
    def tied_best_accuracy(self) -> float:
        """The tied-best averages' mean over the topics (over the one selection, when selected over all pairs)."""
        return mean_of(self.tied_best.values())


@dataclass
class DemoOutcome:
    """The demo's three steps, each as it returns alone."""

    simulation: SimulationSummary
    selection: SelectionOutcome
    evaluation: EvaluationOutcome


def mean_of(values: Iterable[float]) -> float:
    """The unweighted mean; NaN for none."""
    values = list(values)
    return sum(values) / len(values) if values else float("nan")
