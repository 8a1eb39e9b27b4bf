"""`prefcraft prefdisco`: the PrefDisco component and its steps, each its options (`options`), work, report and the
MLflow run the runner opens for it (its name here, its params beside its work).

Steps: `build-scenarios` (questions with answers -> scenarios in the reference's JSONL), `compile` (MIPROv2 over the
question asker), `evaluate` (Baseline, Discovery and Oracle on held-out scenarios) and `demo` (evaluate on the bundled
synthetic scenarios with the embedded model and a small turn budget: the evaluate step's run, `prefdisco-evaluate`).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, ReportCharts, Step, StepCode
from prefcraft.options import Options

HELP = "PrefDisco: elicit a user's preferences by asking, then answer (build-scenarios, compile, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    overall = [summary for summary in outcome.summaries if summary.task == "all"] or outcome.summaries
    by_condition = {summary.condition: summary.pref_align.mean for summary in overall}
    return Comparison("PrefAlign (1-5)", "baseline (no questions)", by_condition["baseline"],
                      "discovery (asks first)", by_condition["discovery"], "points")


# Each step's options and code, imported when a step's flags are built or it runs: `prefcraft prefdisco --help` imports
# none.
def _build_options() -> type[Options]:
    from prefcraft.components.prefdisco.options import BuildOptions
    return BuildOptions


def _compile_options() -> type[Options]:
    from prefcraft.components.prefdisco.options import CompileOptions
    return CompileOptions


def _evaluate_options() -> type[Options]:
    from prefcraft.components.prefdisco.options import EvaluateOptions
    return EvaluateOptions


def _demo_options() -> type[Options]:
    from prefcraft.components.prefdisco.options import DemoOptions
    return DemoOptions


def _build_code() -> StepCode:
    from prefcraft.components.prefdisco.build import build, build_params, format_build, load_problems
    return StepCode(build, format_build, load_problems, build_params)


def _compile_code() -> StepCode:
    from prefcraft.components.prefdisco.compilation import compile_asker, compile_run_params, load_compiled_on
    from prefcraft.components.prefdisco.report import format_compile
    return StepCode(compile_asker, format_compile, load_compiled_on, compile_run_params)


def _evaluate_code() -> StepCode:
    from prefcraft.components.prefdisco.evaluation import evaluate, evaluation_params, load_evaluated
    from prefcraft.components.prefdisco.report import format_evaluation
    return StepCode(evaluate, format_evaluation, load_evaluated, evaluation_params)


def _charts() -> ReportCharts:
    from prefcraft.components.prefdisco.charts import CHARTS
    return CHARTS


def _programs() -> dict[str, Any]:
    from prefcraft.optimizers.prefdisco import PROGRAMS
    return PROGRAMS


COMPONENT = Component(
    name="prefdisco", title="PrefDisco", help=HELP,
    steps={
        "build-scenarios": Step("turn a question set with answers into PrefDisco scenarios (personas, profiles, "
                                "rubrics)", _build_options, _build_code, models=False,
                                run_name="prefdisco-build-scenarios"),
        "compile": Step("MIPROv2 over the question asker, PrefAlign of its answer gated by correctness as the metric",
                        _compile_options, _compile_code, run_name="prefdisco-compile"),
        "evaluate": Step("Baseline, Discovery and Oracle on held-out scenarios: PrefAlign, NormAlign, accuracy, "
                         "questions", _evaluate_options, _evaluate_code, run_name="prefdisco-evaluate"),
        "demo": Step("evaluate 3 bundled synthetic test scenarios (one per task) on the embedded model, 2 turns",
                     _demo_options, _evaluate_code, run_name="prefdisco-evaluate"),
    },
    demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    import_charts=_charts, import_programs=_programs,
)
