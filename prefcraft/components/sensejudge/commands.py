"""`prefcraft sensejudge`: preference descriptions written from a user's dev pairs, the subset whose majority vote
judges best, and the selected judge's accuracy, consistency and position bias on test pairs; the response models
ranked by the majority vote of random descriptions per topic (the paper's way) or by the selected judge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

from prefcraft.components.component import Comparison, Component, Demo, Emit, Step
from prefcraft.components.sensejudge.charts import CHARTS
from prefcraft.components.sensejudge.simulation import DEFAULT_PERSONA, SimulationConfig
from prefcraft.components.sensejudge.steps import (
    DEFAULT_PAIRS,
    SENSEJUDGE,
    RankingJudge,
    Scope,
    SenseJudgeJob,
    run_sensejudge,
)
from prefcraft.optimizers.sensejudge import SubsetSelectionConfig
from prefcraft.options import Count, FilePath, OneOrMore, Options, Positive, option
from prefcraft.programs.sensejudge import SelectedJudge

HELP = "SenseJudge: preference subsets and model ranking (simulate, select, evaluate, demo)"
DEMO_TOPICS = ["QA", "Math"]  # two of SenseBench's eight, with short requests: a small model's context fits them


class _Pairs(Options):
    pairs: FilePath | None = option(None, "labelled pairs to read, PersonalRewardBench schema (default: "
                                    f"{DEFAULT_PAIRS}, where simulate writes them)")


class _Simulation(Options):
    renamed_options: ClassVar[dict[str, str]] = {"dialogues": "sensebench"}
    sensebench: FilePath = option(..., "SenseBench's new_sense_bmk.json or its folder (not shipped: no licence "
                                  "upstream)")
    topics: OneOrMore[str] | None = option(None, "SenseBench topics to draw dialogues from (default: every topic of "
                                           "the file, as in the paper)", metavar="TOPIC")
    dev_dialogues: Positive = option(4, "dialogues per topic whose pairs are dev pairs")
    test_dialogues: Positive = option(2, "dialogues per topic whose pairs are test pairs")
    variants: OneOrMore[str] = option(["plain", "concise", "detailed"],
                                      "response models: the task model under these system prompts")
    persona: str | None = option(None, "the simulated annotator's persona (default: wants short answers)")
    max_context_chars: int = option(1200, "dialogue turns kept per request")
    max_response_chars: int = option(600, "longest response")
    response_temperature: float = option(0.7, "sampling of the responses")

    def simulation(self, settings: Any) -> SimulationConfig:
        return SimulationConfig(
            dev_dialogues=self.dev_dialogues, test_dialogues=self.test_dialogues, variants=tuple(self.variants),
            persona=self.persona or DEFAULT_PERSONA, topics=tuple(self.topics) if self.topics else None,
            max_context_chars=self.max_context_chars,
            max_response_chars=self.max_response_chars, response_temperature=self.response_temperature,
            seed=settings.seed,
        )  # fmt: skip


class _Judge(Options):
    judge: FilePath | None = option(None, "the compiled SelectedJudge: select writes it, evaluate reads it (default: "
                                    "runs/sensejudge/sensejudge.json)")
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

    def selection(self, settings: Any) -> SubsetSelectionConfig:
        return SubsetSelectionConfig(
            exhaustive_limit=self.exhaustive_limit, beam_width=self.beam_width,
            penalize_order_imbalance=self.penalize_order_imbalance, unparseable_vote=self.unparseable_vote,
            stop_when_perfect=self.stop_when_perfect, num_threads=settings.num_threads,
        )  # fmt: skip


class _Evaluation(Options):
    reference_ranking: OneOrMore[str] | None = option(
        None, "reference ranking of the response models, best first (default: the annotator's)", metavar="MODEL")
    ranking_judge: RankingJudge = option(
        "random_descriptions", "who decides the comparisons the models are ranked by: the majority vote of "
        "--ranking-descriptions descriptions drawn at random per topic (the paper's way), or the selected judge")
    ranking_descriptions: Positive = option(5, "descriptions drawn per topic for the ranking (all of a topic's when "
                                            "it has fewer)")
    output_dir: FilePath | None = option(None, "where judgments go (default: runs/sensejudge)")


class SimulateOptions(_Simulation):
    renamed_options: ClassVar[dict[str, str]] = {"dialogues": "sensebench", "pairs": "output"}
    output: FilePath | None = option(None, f"labelled pairs to write (default: {DEFAULT_PAIRS})")


class SelectOptions(_Selection, _Judge, _Pairs):
    pass


class EvaluateOptions(_Evaluation, _Judge, _Pairs):
    pass


class DemoOptions(_Evaluation, _Selection, _Judge, _Simulation, _Pairs):
    """At most 128 LM calls (docs/sensejudge.md)."""

    pairs: FilePath | None = option(None, f"labelled pairs, written by the simulation and read by the selection and "
                                    f"the evaluation (default: {DEFAULT_PAIRS})")

    topics: OneOrMore[str] | None = option(DEMO_TOPICS, "SenseBench topics to draw dialogues from", metavar="TOPIC")
    dev_dialogues: Positive = option(1, "dialogues per topic whose pairs are dev pairs")
    test_dialogues: Positive = option(1, "dialogues per topic whose pairs are test pairs")
    max_pair_descriptions: Count = option(4, "dev pairs (of each topic) that get a description of their own (the "
                                          "reference: 10)")


def sensejudge_job(options: Options, settings: Any) -> SenseJudgeJob:
    """The job the options describe: the paths given, the simulation and the selection where the step has them."""
    given = ("pairs", "judge", "output_dir", "sensebench", "annotator", "reference_ranking", "ranking_judge",
             "ranking_descriptions")
    job = SenseJudgeJob(**{name: getattr(options, name) for name in given if getattr(options, name, None) is not None})
    if isinstance(options, SimulateOptions) and options.output is not None:
        job.pairs = options.output
    if isinstance(options, _Simulation):
        job.simulation = options.simulation(settings)
    if isinstance(options, _Selection):
        job.max_pair_descriptions = options.max_pair_descriptions
        job.scope = options.scope
        job.selection = options.selection(settings)
    return job


def run_steps(*steps: str) -> Callable[[Options, Any, Emit], Any]:
    """Runs the SenseJudge steps `steps` in order on one job."""
    return lambda options, settings, emit: run_sensejudge(settings, sensejudge_job(options, settings), list(steps),
                                                          emit)


def compare(outcomes: dict[str, Any]) -> Comparison:
    evaluation = outcomes["evaluate"]
    no_description = evaluation.rows[0]
    return Comparison("accuracy, both orders, mean of topics (simulated labels)", no_description.name,
                      no_description.overall, evaluation.selected.name, evaluation.selected.overall, "%")


def _demo_argv(sensebench: Path | None) -> list[str] | None:
    return ["demo", "--sensebench", str(sensebench)] if sensebench else None


COMPONENT = Component(
    name="sensejudge", title="SenseJudge", help=HELP,
    steps={
        "simulate": Step("responses to real SenseBench requests, labelled by a SIMULATED annotator persona",
                         SimulateOptions, run_steps("simulate")),
        "select": Step("write preference descriptions from each topic's dev pairs and select the subset whose vote is "
                       "best",
                       SelectOptions, run_steps("select")),
        "evaluate": Step("accuracy, consistency and position bias of a selected judge on the test pairs, and the "
                         "model ranking", EvaluateOptions, run_steps("evaluate")),
        "demo": Step("simulate, select and evaluate on the embedded model", DemoOptions,
                     run_steps("simulate", "select", "evaluate")),
    },
    run_names=("sensejudge-simulate", "sensejudge-select", "sensejudge-evaluate"), demo=Demo(_demo_argv, compare),
    charts=CHARTS,
    programs={SENSEJUDGE: lambda _: SelectedJudge()},
)
