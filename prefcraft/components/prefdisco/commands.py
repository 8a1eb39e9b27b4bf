"""`prefcraft prefdisco`: the PrefDisco component and its steps, each its options (`options`), work and report.

Steps: `build-scenarios` (questions with answers -> scenarios in the reference's JSONL), `compile` (MIPROv2 over the
question asker), `evaluate` (Baseline, Discovery and Oracle on held-out scenarios) and `demo` (evaluate on the bundled
synthetic scenarios with the embedded model and a small turn budget).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Deferred, Demo, Step, deferred_in

at = deferred_in(__package__)

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
                                "rubrics)", at("options", "BuildOptions"), at("build", "build"),
                                at("build", "format_build"), at("build", "load_problems"), models=False),
        "compile": Step("MIPROv2 over the question asker, PrefAlign of its answer gated by correctness as the metric",
                        at("options", "CompileOptions"), at("compilation", "compile_asker"),
                        at("report", "format_compile"), at("compilation", "load_compiled_on")),
        "evaluate": Step("Baseline, Discovery and Oracle on held-out scenarios: PrefAlign, NormAlign, accuracy, "
                         "questions", at("options", "EvaluateOptions"), at("evaluation", "evaluate"),
                         at("report", "format_evaluation"), at("evaluation", "load_evaluated")),
        "demo": Step("evaluate 3 bundled synthetic test scenarios (one per task) on the embedded model, 2 turns",
                     at("options", "DemoOptions"), at("evaluation", "evaluate"), at("report", "format_evaluation"),
                     at("evaluation", "load_evaluated")),
    },
    run_names=("prefdisco-build-scenarios", "prefdisco-compile", "prefdisco-evaluate"),
    demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts_at=at("charts", "CHARTS"), programs_at=Deferred("prefcraft.optimizers.prefdisco", "PROGRAMS"),
)
