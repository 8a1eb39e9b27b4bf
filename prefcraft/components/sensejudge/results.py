"""What SenseJudge's steps return: the simulation's summary, the selection's outcome, the evaluation's outcome, and
the demo's three."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prefcraft.engine.usage import LMUsage
from prefcraft.metrics.pairwise import PairwiseReport
from prefcraft.metrics.ranking import RankCorrelation
from prefcraft.metrics.stats import Estimate
from prefcraft.optimizers.sensejudge import SubsetSelectionRecord, TopicSelection


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
    def failed_descriptions(self) -> int:
        return sum(len(selection.failed_descriptions) for selection in self.topics.values())

    @property
    def failed_items(self) -> int:
        return self.failed_descriptions

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
    reference_scores: dict[str, float]
    """Each selection's (topic's) score as the reference computes it (3_judge_count.py): the test accuracy averaged
    over its dev-tied-best subsets, or over its tied-worst subsets inverted (`reference_strategies`)."""
    reference_strategies: dict[str, str]
    """Each selection's rule: "forward_best" or "inverted_worst"."""
    reference_subsets: int
    """How many subsets the scores average over, all selections together."""
    ranking: RankingOutcome | None
    """None where the labelled pairs do not name the response models (SenseBench's human labels)."""
    labels: str
    usage: dict[str, LMUsage]

    @property
    def headline(self) -> float:
        """The reference's scores' mean over the topics (the paper's Overall; the one selection's score, when selected
        over all pairs). The saved judge's single pick (`selected`) is reported beside it."""
        return mean_of(self.reference_scores.values())


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
