"""`prefcraft cupid`: the CUPID component and its steps, each its options (`options`), work and report.

Steps: `compile` (MIPROv2 over the preference inferrer; its run "cupid-compile"), `evaluate` (inference P / R / F1
and response scores on held-out instances; its run "cupid-evaluate") and `demo` (the evaluation on the bundled
synthetic data with the embedded model, small budget, in a "cupid-evaluate" run as well).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, ReportCharts, Step, StepCode
from prefcraft.options import Options

HELP = "CUPID: infer a user's contextual preference from prior sessions (compile, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    scores = {response.method: response.score.mean for response in outcome.responses}
    return Comparison("response score (judge, 1-10)", "baseline (no preference)", scores["baseline"],
                      "inferred preference", scores["inferred"], "points")


# Each step's options and code, imported when a step's flags are built or it runs: `prefcraft cupid --help` imports
# none.
def _compile_options() -> type[Options]:
    from prefcraft.components.cupid.options import CompileOptions
    return CompileOptions


def _evaluate_options() -> type[Options]:
    from prefcraft.components.cupid.options import EvaluateOptions
    return EvaluateOptions


def _demo_options() -> type[Options]:
    from prefcraft.components.cupid.options import DemoOptions
    return DemoOptions


def _compile_code() -> StepCode:
    from prefcraft.components.cupid.compilation import compile_inferrer, compile_run_params, load_compiled_on
    from prefcraft.components.cupid.report import format_compile
    return StepCode(compile_inferrer, format_compile, load_compiled_on, compile_run_params)


def _evaluate_code() -> StepCode:
    from prefcraft.components.cupid.evaluation import evaluate, evaluation_params, load_evaluated
    from prefcraft.components.cupid.report import format_evaluation
    return StepCode(evaluate, format_evaluation, load_evaluated, evaluation_params)


def _charts() -> ReportCharts:
    from prefcraft.components.cupid.charts import CHARTS
    return CHARTS


def _programs() -> dict[str, Any]:
    from prefcraft.optimizers.cupid import PROGRAMS
    return PROGRAMS


COMPONENT = Component(
    name="cupid", title="CUPID", help=HELP,
    steps={
        "compile": Step("optimize the preference inferrer (MIPROv2 by default), F1 (decomposer + matcher) as the "
                        "metric", _compile_options, _compile_code, run_name="cupid-compile"),
        "evaluate": Step("P / R / F1 of inferred preferences and judge scores of responses on held-out instances",
                         _evaluate_options, _evaluate_code, run_name="cupid-evaluate"),
        "demo": Step("evaluate on the bundled synthetic instances with the embedded model, small budget",
                     _demo_options, _evaluate_code, run_name="cupid-evaluate",
                     settings_defaults={"task_timeout_s": 600.0}),  # a loaded 2-core machine: about 10 minutes here
    },
    demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    import_charts=_charts, import_programs=_programs,
)
