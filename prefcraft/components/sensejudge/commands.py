"""`prefcraft sensejudge`: the SenseJudge component and its steps, each its options (`options`), work (`steps`) and
report: preference descriptions written from a user's dev pairs, the subset whose majority vote judges best, and the
selected judge's accuracy, consistency and position bias on test pairs; the response models ranked by the majority
vote of random descriptions per topic (the paper's way) or by the selected judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step
from prefcraft.components.sensejudge.charts import CHARTS
from prefcraft.components.sensejudge.options import DemoOptions, EvaluateOptions, SelectOptions, SimulateOptions
from prefcraft.components.sensejudge.report import format_demo, format_evaluation, format_selection, format_simulation
from prefcraft.components.sensejudge.steps import (
    SENSEJUDGE,
    demo,
    evaluate,
    read_dev_pairs,
    read_held_out_pairs,
    read_simulated,
    select,
    simulate,
)
from prefcraft.programs.sensejudge import SelectedJudge

HELP = "SenseJudge: preference subsets and model ranking (simulate, select, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    evaluation = outcome.evaluation
    no_description = evaluation.rows[0]
    return Comparison("accuracy, both orders, mean of topics (simulated labels)", no_description.name,
                      no_description.overall, evaluation.selected.name, evaluation.selected.overall, "%")


def _demo_argv(sensebench: Path | None) -> list[str] | None:
    return ["demo", "--sensebench", str(sensebench)] if sensebench else None


COMPONENT = Component(
    name="sensejudge", title="SenseJudge", help=HELP,
    steps={
        "simulate": Step("responses to real SenseBench requests, labelled by a SIMULATED annotator persona",
                         SimulateOptions, simulate, format_simulation, read_simulated),
        "select": Step("write preference descriptions from each topic's dev pairs and select the subset whose vote is "
                       "best",
                       SelectOptions, select, format_selection, read_dev_pairs),
        "evaluate": Step("accuracy, consistency and position bias of a selected judge on the test pairs, and the "
                         "model ranking", EvaluateOptions, evaluate, format_evaluation, read_held_out_pairs),
        "demo": Step("simulate, select and evaluate on the embedded model", DemoOptions, demo, format_demo,
                     read_simulated),
    },
    run_names=("sensejudge-simulate", "sensejudge-select", "sensejudge-evaluate"), demo=Demo(_demo_argv, compare),
    charts=CHARTS,
    programs={SENSEJUDGE: lambda _: SelectedJudge()},
)
