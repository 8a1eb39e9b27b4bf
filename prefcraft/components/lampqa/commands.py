"""`prefcraft lampqa`: the LaMP-QA component and its steps, each its options (`options`), work and report.

Steps: `compile` (MIPROv2 over PlanPers' planner + answerer, the aspect score as metric), `evaluate` (the methods on
held-out questions, scored by the aspect judge) and `demo` (evaluate on the bundled synthetic questions with the
embedded model, small budget).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step
from prefcraft.components.lampqa.charts import CHARTS
from prefcraft.components.lampqa.compilation import compile_planpers, load_compiled_on
from prefcraft.components.lampqa.evaluation import evaluate, load_evaluated
from prefcraft.components.lampqa.options import CompileOptions, DemoOptions, EvaluateOptions
from prefcraft.components.lampqa.report import format_compile, format_evaluation
from prefcraft.optimizers.lampqa import PROGRAM_NAME
from prefcraft.programs.lampqa import DEFAULT_K, BM25Retriever, PlanPers

HELP = "LaMP-QA: aspect planner for personalized long-form answers (compile, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    return Comparison("aspect score", "no personalization", outcome.methods["none"].report.overall.mean,
                      "PlanPers (plan, then answer)", outcome.methods["planpers"].report.overall.mean, "points")


COMPONENT = Component(
    name="lampqa", title="LaMP-QA", help=HELP,
    steps={
        "compile": Step("MIPROv2 over PlanPers (planner + answerer) against the aspect score", CompileOptions,
                        compile_planpers, format_compile, load_compiled_on),
        "evaluate": Step("no personalization, RAG (over the user's or a random user's profile) and PlanPers (and a "
                         "compiled PlanPers) on held-out questions",
                         EvaluateOptions, evaluate, format_evaluation, load_evaluated),
        "demo": Step("evaluate on the bundled SYNTHETIC questions with the embedded model, small budget",
                     DemoOptions, evaluate, format_evaluation, load_evaluated),
    },
    run_names=("lampqa-compile", "lampqa-evaluate"), demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: PlanPers(BM25Retriever(metadata.get("k", DEFAULT_K)))},
)
