"""`prefcraft lampqa`: the LaMP-QA component and its steps, each its options (`options`), the MLflow run the runner
opens for it (`run_name`), its work and report.

Steps: `compile` (MIPROv2 over PlanPers' planner + answerer, the aspect score as metric; run `lampqa-compile`),
`evaluate` (the methods on held-out questions, scored by the aspect judge; run `lampqa-evaluate`) and `demo` (evaluate
on the bundled synthetic questions with the embedded model, small budget; recorded as evaluate's run).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, ReportCharts, Step, StepCode
from prefcraft.options import Options

HELP = "LaMP-QA: aspect planner for personalized long-form answers (compile, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    return Comparison("aspect score", "baseline (no personalization)", outcome.methods["baseline"].report.overall.mean,
                      "PlanPers (plan, then answer)", outcome.methods["planpers"].report.overall.mean, "points")


# Each step's options and code, imported when a step's flags are built or it runs: `prefcraft lampqa --help` imports
# none.
def _compile_options() -> type[Options]:
    from prefcraft.components.lampqa.options import CompileOptions
    return CompileOptions


def _evaluate_options() -> type[Options]:
    from prefcraft.components.lampqa.options import EvaluateOptions
    return EvaluateOptions


def _demo_options() -> type[Options]:
    from prefcraft.components.lampqa.options import DemoOptions
    return DemoOptions


def _compile_code() -> StepCode:
    from prefcraft.components.lampqa.compilation import compile_planpers, compile_run_params, load_compiled_on
    from prefcraft.components.lampqa.report import format_compile
    return StepCode(compile_planpers, format_compile, load_compiled_on, compile_run_params)


def _evaluate_code() -> StepCode:
    from prefcraft.components.lampqa.evaluation import evaluate, evaluation_params, load_evaluated
    from prefcraft.components.lampqa.report import format_evaluation
    return StepCode(evaluate, format_evaluation, load_evaluated, evaluation_params)


def _charts() -> ReportCharts:
    from prefcraft.components.lampqa.charts import CHARTS
    return CHARTS


def _programs() -> dict[str, Any]:
    from prefcraft.optimizers.lampqa import PROGRAMS
    return PROGRAMS


COMPONENT = Component(
    name="lampqa", title="LaMP-QA", help=HELP,
    steps={
        "compile": Step("MIPROv2 over PlanPers (planner + answerer) against the aspect score",
                        _compile_options, _compile_code, run_name="lampqa-compile"),
        "evaluate": Step("the baseline (no personalization), RAG (over the user's or a random user's profile) and "
                         "PlanPers (and a compiled PlanPers) on held-out questions",
                         _evaluate_options, _evaluate_code, run_name="lampqa-evaluate"),
        "demo": Step("evaluate on the bundled SYNTHETIC questions with the embedded model, small budget",
                     _demo_options, _evaluate_code, run_name="lampqa-evaluate"),
    },
    demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    import_charts=_charts, import_programs=_programs,
)
