"""`prefcraft cupid`: the CUPID component and its steps, each its options (`options`), work and report.

Steps: `compile` (MIPROv2 over the preference inferrer), `evaluate` (inference P / R / F1 and response scores on
held-out instances) and `demo` (both on the bundled synthetic data with the embedded model, small budget).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Deferred, Demo, Step, deferred_in

at = deferred_in(__package__)

HELP = "CUPID: infer a user's contextual preference from prior sessions (compile, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    scores = {response.method: response.score.mean for response in outcome.responses}
    return Comparison("response score (judge, 1-10)", "no preference", scores["none"], "inferred preference",
                      scores["inferred"], "points")


COMPONENT = Component(
    name="cupid", title="CUPID", help=HELP,
    steps={
        "compile": Step("optimize the preference inferrer (MIPROv2 by default), F1 (decomposer + matcher) as the "
                        "metric", at("options", "CompileOptions"), at("compilation", "compile_inferrer"),
                        at("report", "format_compile"), at("compilation", "load_compiled_on")),
        "evaluate": Step("P / R / F1 of inferred preferences and judge scores of responses on held-out instances",
                         at("options", "EvaluateOptions"), at("evaluation", "evaluate"),
                         at("report", "format_evaluation"), at("evaluation", "load_evaluated")),
        "demo": Step("evaluate on the bundled synthetic instances with the embedded model, small budget",
                     at("options", "DemoOptions"), at("evaluation", "evaluate"), at("report", "format_evaluation"),
                     at("evaluation", "load_evaluated"),
                     settings_defaults={"task_timeout_s": 600.0}),  # a loaded 2-core machine: about 10 minutes here
    },
    run_names=("cupid-compile", "cupid-evaluate"), demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts_at=at("charts", "CHARTS"), programs_at=Deferred("prefcraft.optimizers.cupid", "PROGRAMS"),
)
