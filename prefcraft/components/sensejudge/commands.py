"""`prefcraft sensejudge`: the SenseJudge component and its steps, each its options (`options`), work (`steps`) and
report: preference descriptions written from a user's dev pairs, the subset whose majority vote judges best, and the
selected judge's accuracy, consistency and position bias on test pairs; the response models ranked by the majority
vote of random descriptions per topic (the paper's way) or by the selected judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step, deferred_in

at = deferred_in(__package__)

HELP = "SenseJudge: preference subsets and model ranking (simulate, select, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    evaluation = outcome.evaluation
    no_description = evaluation.rows[0]
    return Comparison("accuracy, both orders, mean of topics (simulated labels)", no_description.name,
                      no_description.overall, "SenseJudge score (the reference's)", evaluation.headline, "%")


def _demo_argv(sensebench: Path | None) -> list[str] | None:
    return ["demo", "--sensebench", str(sensebench)] if sensebench else None


COMPONENT = Component(
    name="sensejudge", title="SenseJudge", help=HELP,
    steps={
        "simulate": Step("responses to real SenseBench requests, labelled by a SIMULATED annotator persona",
                         at("options", "SimulateOptions"), at("steps", "simulate"), at("report", "format_simulation"),
                         at("steps", "read_simulated")),
        "select": Step("write preference descriptions from each topic's dev pairs and select the subset whose vote is "
                       "best", at("options", "SelectOptions"), at("steps", "select"),
                       at("report", "format_selection"), at("steps", "read_dev_pairs")),
        "evaluate": Step("accuracy, consistency and position bias of a selected judge on the test pairs, and the "
                         "model ranking", at("options", "EvaluateOptions"), at("steps", "evaluate"),
                         at("report", "format_evaluation"), at("steps", "read_held_out_pairs")),
        "demo": Step("simulate, select and evaluate on the embedded model", at("options", "DemoOptions"),
                     at("steps", "demo"), at("report", "format_demo"), at("steps", "read_simulated")),
    },
    run_names=("sensejudge-simulate", "sensejudge-select", "sensejudge-evaluate"), demo=Demo(_demo_argv, compare),
    charts_at=at("charts", "CHARTS"), programs_at=at("steps", "PROGRAMS"),
)
