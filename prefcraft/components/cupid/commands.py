"""`prefcraft cupid`: the CUPID component and its steps, each its options (`options`), work and report.

Steps: `compile` (MIPROv2 over the preference inferrer), `evaluate` (inference P / R / F1 and response scores on
held-out instances) and `demo` (both on the bundled synthetic data with the embedded model, small budget).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step
from prefcraft.components.cupid.charts import CHARTS
from prefcraft.components.cupid.compilation import compile_inferrer, load_compiled_on
from prefcraft.components.cupid.evaluation import evaluate, load_evaluated
from prefcraft.components.cupid.options import CompileOptions, DemoOptions, EvaluateOptions
from prefcraft.components.cupid.report import format_compile, format_evaluation
from prefcraft.optimizers.cupid import PROGRAM_NAME
from prefcraft.programs.cupid import PreferenceInferrer

HELP = "CUPID: infer a user's contextual preference from prior sessions (compile, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    scores = {response.method: response.score.mean for response in outcome.responses}
    return Comparison("response score (judge, 1-10)", "no preference", scores["none"], "inferred preference",
                      scores["inferred"], "points")


COMPONENT = Component(
    name="cupid", title="CUPID", help=HELP,
    steps={
        "compile": Step("optimize the preference inferrer (MIPROv2 by default), F1 (decomposer + matcher) as the "
                        "metric", CompileOptions, compile_inferrer, format_compile, load_compiled_on),
        "evaluate": Step("P / R / F1 of inferred preferences and judge scores of responses on held-out instances",
                         EvaluateOptions, evaluate, format_evaluation, load_evaluated),
        "demo": Step("evaluate on the bundled synthetic instances with the embedded model, small budget",
                     DemoOptions, evaluate, format_evaluation, load_evaluated,
                     settings_defaults={"task_timeout_s": 600.0}),  # a loaded 2-core machine: about 10 minutes here
    },
    run_names=("cupid-compile", "cupid-evaluate"), demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: PreferenceInferrer(metadata.get("variant", "relevant"))},
)
