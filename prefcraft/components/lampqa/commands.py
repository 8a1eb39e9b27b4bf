"""`prefcraft lampqa`: the LaMP-QA component and its steps, each its options (`options`), work and report.

Steps: `compile` (MIPROv2 over PlanPers' planner + answerer, the aspect score as metric), `evaluate` (the methods on
held-out questions, scored by the aspect judge) and `demo` (evaluate on the bundled synthetic questions with the
embedded model, small budget).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Deferred, Demo, Step, deferred_in

at = deferred_in(__package__)

HELP = "LaMP-QA: aspect planner for personalized long-form answers (compile, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    return Comparison("aspect score", "no personalization", outcome.methods["none"].report.overall.mean,
                      "PlanPers (plan, then answer)", outcome.methods["planpers"].report.overall.mean, "points")


COMPONENT = Component(
    name="lampqa", title="LaMP-QA", help=HELP,
    steps={
        "compile": Step("MIPROv2 over PlanPers (planner + answerer) against the aspect score",
                        at("options", "CompileOptions"), at("compilation", "compile_planpers"),
                        at("report", "format_compile"), at("compilation", "load_compiled_on")),
        "evaluate": Step("no personalization, RAG (over the user's or a random user's profile) and PlanPers (and a "
                         "compiled PlanPers) on held-out questions",
                         at("options", "EvaluateOptions"), at("evaluation", "evaluate"),
                         at("report", "format_evaluation"), at("evaluation", "load_evaluated")),
        "demo": Step("evaluate on the bundled SYNTHETIC questions with the embedded model, small budget",
                     at("options", "DemoOptions"), at("evaluation", "evaluate"), at("report", "format_evaluation"),
                     at("evaluation", "load_evaluated")),
    },
    run_names=("lampqa-compile", "lampqa-evaluate"), demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts_at=at("charts", "CHARTS"), programs_at=Deferred("prefcraft.optimizers.lampqa", "PROGRAMS"),
)
