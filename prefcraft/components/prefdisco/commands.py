"""`prefcraft prefdisco`: the PrefDisco component and its steps, each its options (`options`), work and report.

Steps: `build-scenarios` (questions with answers -> scenarios in the reference's JSONL), `compile` (MIPROv2 over the
question asker), `evaluate` (Baseline, Discovery and Oracle on held-out scenarios) and `demo` (evaluate on the bundled
synthetic scenarios with the embedded model and a small turn budget).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step
from prefcraft.components.prefdisco.build import build, format_build, load_problems
from prefcraft.components.prefdisco.charts import CHARTS
from prefcraft.components.prefdisco.compilation import compile_asker, load_compiled_on
from prefcraft.components.prefdisco.evaluation import evaluate, load_evaluated
from prefcraft.components.prefdisco.options import BuildOptions, CompileOptions, DemoOptions, EvaluateOptions
from prefcraft.components.prefdisco.report import format_compile, format_evaluation
from prefcraft.optimizers.prefdisco import PROGRAM_NAME
from prefcraft.programs.prefdisco import QuestionAsker

HELP = "PrefDisco: elicit a user's preferences by asking, then answer (build-scenarios, compile, evaluate, demo)"


def compare(outcome: Any) -> Comparison:
    overall = [summary for summary in outcome.summaries if summary.task == "all"] or outcome.summaries
    by_condition = {summary.condition: summary.pref_align.mean for summary in overall}
    return Comparison("PrefAlign (1-5)", "baseline (no questions)", by_condition["baseline"],
                      "discovery (asks first)", by_condition["discovery"], "points")


COMPONENT = Component(
    name="prefdisco", title="PrefDisco", help=HELP,
    steps={
        "build-scenarios": Step("turn a question set with answers into PrefDisco scenarios (personas, profiles, "
                                "rubrics)", BuildOptions, build, format_build, load_problems, models=False),
        "compile": Step("MIPROv2 over the question asker, PrefAlign of its answer gated by correctness as the metric",
                        CompileOptions, compile_asker, format_compile, load_compiled_on),
        "evaluate": Step("Baseline, Discovery and Oracle on held-out scenarios: PrefAlign, NormAlign, accuracy, "
                         "questions", EvaluateOptions, evaluate, format_evaluation, load_evaluated),
        "demo": Step("evaluate 3 bundled synthetic test scenarios (one per task) on the embedded model, 2 turns",
                     DemoOptions, evaluate, format_evaluation, load_evaluated),
    },
    run_names=("prefdisco-build-scenarios", "prefdisco-compile", "prefdisco-evaluate"),
    demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: QuestionAsker(metadata["max_turns"])},
)
