"""The SenseJudge steps' options: each step's job, read directly by its work (`simulation`, `steps`); its flags,
experiment options and `prefcraft.run` arguments are made from it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from prefcraft.components.sensejudge.simulation import SimulationConfig
from prefcraft.optimizers.sensejudge import SubsetSelectionConfig
from prefcraft.options import Count, FilePath, OneOrMore, Options, Positive, option

RUNS = Path("runs/sensejudge")
DEFAULT_PAIRS = RUNS / "pairs.jsonl"
DEMO_TOPICS = ["QA", "Math"]  # two of SenseBench's eight, with short requests: a small model's context fits them
Scope = Literal["topic", "all"]
RankingJudge = Literal["random_descriptions", "selected"]


class _Pairs(Options):
    pairs: FilePath = option(DEFAULT_PAIRS, "labelled pairs to read, PersonalRewardBench schema (default: "
                             f"{DEFAULT_PAIRS}, where simulate writes them)")


class _Simulation(SimulationConfig):
    renamed_options: ClassVar[dict[str, str]] = {"dialogues": "sensebench"}
    sensebench: FilePath = option(..., "SenseBench's new_sense_bmk.json or its folder (not shipped: no licence "
                                  "upstream)")


class _Judge(Options):
    judge: FilePath = option(RUNS / "sensejudge.json", "the compiled SelectedJudge: select writes it, evaluate reads "
                             "it")
    annotator: str | None = option(None, "whose pairs, when the file holds several annotators")


class _Selection(Options):
    scope: Scope = option("topic", "write and select descriptions per topic, on that topic's dev pairs, and judge each "
                          "test pair with its topic's (the paper's way); or once over all dev pairs")
    max_pair_descriptions: Count = option(10, "dev pairs (of each topic) that get a description of their own (the "
                                          "reference: 10)")
    exhaustive_limit: Count = option(12, "beyond this many descriptions, beam")
    beam_width: Positive = option(64, "subsets kept at each step of the beam")
    penalize_order_imbalance: bool = option(
        False, "score a subset minus the gap between its right answers in the two orders")
    unparseable_vote: Literal["against", "abstain"] = option(
        "against", "what a failed or unparseable vote counts as: against the chosen response (the reference's rule) "
        "or nothing")
    stop_when_perfect: bool = option(
        False, "stop judging once a subset is right on every dev judgment (fewer calls; the reference judges every "
        "description on every pair)")

    def selection(self, num_threads: int) -> SubsetSelectionConfig:
        """The subset selection's settings: these options, judging `num_threads` descriptions at once."""
        return SubsetSelectionConfig(
            exhaustive_limit=self.exhaustive_limit, beam_width=self.beam_width,
            penalize_order_imbalance=self.penalize_order_imbalance, unparseable_vote=self.unparseable_vote,
            stop_when_perfect=self.stop_when_perfect, num_threads=num_threads,
        )  # fmt: skip


class _Evaluation(Options):
    reference_ranking: OneOrMore[str] | None = option(
        None, "reference ranking of the response models, best first (default: the annotator's)", metavar="MODEL")
    ranking_judge: RankingJudge = option(
        "random_descriptions", "who decides the comparisons the models are ranked by: the majority vote of "
        "--ranking-descriptions descriptions drawn at random per topic (the paper's way), or the selected judge")
    ranking_descriptions: Positive = option(5, "descriptions drawn per topic for the ranking (all of a topic's when "
                                            "it has fewer)")
    output_dir: FilePath = option(RUNS, "where judgments go")


class SimulateOptions(_Simulation):
    renamed_options: ClassVar[dict[str, str]] = {"dialogues": "sensebench", "pairs": "output"}
    output: FilePath = option(DEFAULT_PAIRS, "labelled pairs to write")


class SelectOptions(_Selection, _Judge, _Pairs):
    pass


class EvaluateOptions(_Evaluation, _Judge, _Pairs):
    pass


class DemoOptions(_Evaluation, _Selection, _Judge, _Simulation, _Pairs):
    """At most 128 LM calls (docs/sensejudge.md)."""

    pairs: FilePath = option(DEFAULT_PAIRS, "labelled pairs, written by the simulation and read by the selection and "
                             "the evaluation")

    topics: OneOrMore[str] | None = option(DEMO_TOPICS, "SenseBench topics to draw dialogues from", metavar="TOPIC")
    dev_dialogues: Positive = option(1, "dialogues per topic whose pairs are dev pairs")
    test_dialogues: Positive = option(1, "dialogues per topic whose pairs are test pairs")
    max_pair_descriptions: Count = option(4, "dev pairs (of each topic) that get a description of their own (the "
                                          "reference: 10)")


SelectingOptions = SelectOptions | DemoOptions
EvaluatingOptions = EvaluateOptions | DemoOptions
