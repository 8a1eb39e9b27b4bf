"""The SenseJudge steps' options: each step's job, read directly by its work (`simulate`, `selection`, `evaluation`,
`demo`); its flags, experiment options and `prefcraft.run` arguments are made from it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from prefcraft.components.sensejudge.human_labels import MAX_INPUT_TOKENS, LabelSplit
from prefcraft.components.sensejudge.simulation import ANNOTATOR_ID, SimulationConfig
from prefcraft.metrics.majority_vote import UnparseableVote
from prefcraft.optimizers.sensejudge import SubsetSelectionConfig
from prefcraft.options import Count, FilePath, OneOrMore, Options, Positive, option
from prefcraft.programs.sensejudge import DescriptionLength

RUNS = Path("runs/sensejudge")
DEFAULT_PAIRS = RUNS / "pairs.jsonl"
DEMO_TOPICS = ["QA", "Math"]  # two of SenseBench's eight, with short requests: a small model's context fits them
Scope = Literal["topic", "all"]
RankingJudge = Literal["random_descriptions", "selected"]


class _Pairs(Options):
    renamed_options: ClassVar[dict[str, str]] = {"pairs": "data"}
    data: FilePath = option(DEFAULT_PAIRS, "labelled pairs to read, PersonalRewardBench schema (default: "
                            f"{DEFAULT_PAIRS}, where simulate writes them)")


class HumanLabelOptions(_Pairs):
    """SenseBench's human labels, read instead of `data` when given (`human_labels`)."""

    human_labels: FilePath | None = option(
        None, "SenseBench's human labels as published: one annotator's sense-label<N>.json, or the folder of all three "
        "(choose one with --annotator 1, 2 or 3); read instead of --data and split into dev and test pairs per topic "
        "as the reference splits them (default: none; the --data file is read)")
    dev_pairs_per_topic: Positive = option(10, "human labels: the pairs of each topic drawn as dev pairs; the others "
                                           "are test pairs (the reference: 10)")
    split_seed: int = option(42, "human labels: the seed the dev pairs are drawn with (the reference: 42)")
    long_input_cut: bool = option(
        True, f"human labels: the judge reads a pair whose dialogue and responses exceed {MAX_INPUT_TOKENS:,} tokens "
        "(cl100k_base, as the reference counts) with the dialogue's last turn alone, as the reference does",
        flag="--no-long-input-cut")
    topics: OneOrMore[str] | None = option(None, "human labels: the topics to read (default: all, as in the paper)",
                                           metavar="TOPIC")
    max_test_pairs_per_topic: Positive | None = option(
        None, "human labels: judge only the first N test pairs of each topic (default: all)")

    def label_split(self) -> LabelSplit:
        return LabelSplit(self.dev_pairs_per_topic, self.split_seed, MAX_INPUT_TOKENS if self.long_input_cut else None,
                          tuple(self.topics) if self.topics else None, self.max_test_pairs_per_topic)


class _Simulation(SimulationConfig):
    renamed_options: ClassVar[dict[str, str]] = {"dialogues": "sensebench"}
    sensebench: FilePath = option(..., "SenseBench's new_sense_bmk.json or its folder (not shipped: no licence "
                                  "upstream)")


class _Judge(Options):
    renamed_options: ClassVar[dict[str, str]] = {"judge": "judge_file"}
    judge_file: FilePath = option(RUNS / "sensejudge.json", "the compiled SelectedJudge: select writes it, evaluate "
                                  "reads it")
    annotator: str | None = option(None, "whose pairs, when the file holds several annotators (of a --human-labels "
                                   "folder: 1, 2 or 3) (default: the file's only annotator)")


class _Selection(Options):
    scope: Scope = option("topic", "write and select descriptions per topic, on that topic's dev pairs, and judge each "
                          "test pair with its topic's (the paper's way); or once over all dev pairs")
    max_pair_descriptions: Count = option(10, "dev pairs (of each topic) that get a description of their own (the "
                                          "reference: 10)")
    description_length: DescriptionLength = option(
        "one_sentence", "each written description in one very short sentence (the public reference code's prompt) or "
        "in about three sentences (the paper's prompt, Appendix A.2)")
    exhaustive_limit: Count = option(SubsetSelectionConfig.exhaustive_limit, "beyond this many descriptions, beam")
    beam_width: Positive = option(SubsetSelectionConfig.beam_width, "subsets kept at each step of the beam")
    penalize_order_imbalance: bool = option(
        SubsetSelectionConfig.penalize_order_imbalance,
        "score a subset minus the gap between its right answers in the two orders")
    unparseable_vote: UnparseableVote = option(
        SubsetSelectionConfig.unparseable_vote,
        "what a failed or unparseable vote counts as: against the chosen response (the reference's rule) or nothing")
    stop_when_perfect: bool = option(
        SubsetSelectionConfig.stop_when_perfect,
        "stop judging once a subset is right on every dev judgment (fewer calls; the reference judges every "
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
    renamed_options: ClassVar[dict[str, str]] = {"pairs": "output"}
    output: FilePath = option(DEFAULT_PAIRS, "labelled pairs to write")


class SelectOptions(_Selection, _Judge, HumanLabelOptions):
    pass


class EvaluateOptions(_Evaluation, _Judge, HumanLabelOptions):
    pass


class DemoOptions(_Evaluation, _Selection, _Judge, _Simulation, _Pairs):
    """At most 128 LM calls (docs/sensejudge.md)."""

    data: FilePath = option(DEFAULT_PAIRS, "labelled pairs, written by the simulation and read by the selection and "
                            "the evaluation")
    annotator: str | None = option(None, "whose pairs to select and evaluate on (default: the only one: the "
                                   f"simulation labels every pair as {ANNOTATOR_ID})")

    topics: OneOrMore[str] | None = option(DEMO_TOPICS, "SenseBench topics to draw dialogues from", metavar="TOPIC")
    dev_dialogues: Positive = option(1, "dialogues per topic whose pairs are dev pairs")
    test_dialogues: Positive = option(1, "dialogues per topic whose pairs are test pairs")
    max_pair_descriptions: Count = option(4, "dev pairs (of each topic) that get a description of their own (the "
                                          "reference: 10)")


SelectingOptions = SelectOptions | DemoOptions
EvaluatingOptions = EvaluateOptions | DemoOptions
