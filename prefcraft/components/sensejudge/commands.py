"""`prefcraft sensejudge`: the SenseJudge component and its steps, each its options (`options`), work (`simulate`,
`selection`, `evaluation`, `demo`), MLflow run (its name here, its params beside its work) and report: preference
descriptions written from a user's dev pairs, the subset whose majority vote judges best, and the selected judge's
accuracy, consistency and position bias on test pairs; the response models ranked by the majority vote of random
descriptions per topic (the paper's way) or by the selected judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, ReportCharts, Step, StepCode
from prefcraft.options import Options

HELP = "SenseJudge: preference subsets and model ranking (simulate, select, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    evaluation = outcome.evaluation
    no_description = evaluation.rows[0]  # the judge told nothing about the user: the baseline
    return Comparison("accuracy, both orders, mean of topics (simulated labels)", f"baseline ({no_description.name})",
                      no_description.overall, "SenseJudge score (the reference's)", evaluation.headline, "%")


def _demo_argv(sensebench: Path | None) -> list[str] | None:
    return ["demo", "--sensebench", str(sensebench)] if sensebench else None


# Each step's options and code, imported when a step's flags are built or it runs: `prefcraft sensejudge --help`
# imports none.
def _simulate_options() -> type[Options]:
    from prefcraft.components.sensejudge.options import SimulateOptions
    return SimulateOptions


def _select_options() -> type[Options]:
    from prefcraft.components.sensejudge.options import SelectOptions
    return SelectOptions


def _evaluate_options() -> type[Options]:
    from prefcraft.components.sensejudge.options import EvaluateOptions
    return EvaluateOptions


def _demo_options() -> type[Options]:
    from prefcraft.components.sensejudge.options import DemoOptions
    return DemoOptions


def _simulate_code() -> StepCode:
    from prefcraft.components.sensejudge.report import format_simulation
    from prefcraft.components.sensejudge.simulate import read_simulated, simulate, simulate_params
    return StepCode(simulate, format_simulation, read_simulated, simulate_params)


def _select_code() -> StepCode:
    from prefcraft.components.sensejudge.report import format_selection
    from prefcraft.components.sensejudge.selection import read_dev_pairs, select, selection_params
    return StepCode(select, format_selection, read_dev_pairs, selection_params)


def _evaluate_code() -> StepCode:
    from prefcraft.components.sensejudge.evaluation import evaluate, evaluation_params, read_held_out_pairs
    from prefcraft.components.sensejudge.report import format_evaluation
    return StepCode(evaluate, format_evaluation, read_held_out_pairs, evaluation_params)


def _demo_code() -> StepCode:
    from prefcraft.components.sensejudge.demo import demo
    from prefcraft.components.sensejudge.report import format_demo
    from prefcraft.components.sensejudge.simulate import read_simulated
    return StepCode(demo, format_demo, read_simulated)


def _charts() -> ReportCharts:
    from prefcraft.components.sensejudge.charts import CHARTS
    return CHARTS


def _programs() -> dict[str, Any]:
    from prefcraft.components.sensejudge.selection import PROGRAMS
    return PROGRAMS


COMPONENT = Component(
    name="sensejudge", title="SenseJudge", help=HELP,
    steps={
        "simulate": Step("responses to real SenseBench requests, labelled by a SIMULATED annotator persona",
                         _simulate_options, _simulate_code, run_name="sensejudge-simulate"),
        "select": Step("write preference descriptions from each topic's dev pairs and select the subset whose vote is "
                       "best", _select_options, _select_code, run_name="sensejudge-select"),
        "evaluate": Step("accuracy, consistency and position bias of a selected judge on the test pairs, and the "
                         "model ranking", _evaluate_options, _evaluate_code, run_name="sensejudge-evaluate"),
        # each of its three steps in the run that step declares (`StepRun.open_step`): none of its own
        "demo": Step("simulate, select and evaluate on the embedded model", _demo_options, _demo_code),
    },
    demo=Demo(_demo_argv, compare),
    import_charts=_charts, import_programs=_programs,
)
