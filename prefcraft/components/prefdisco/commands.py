"""`prefcraft prefdisco`: the PrefDisco component's steps, their options and the runs they start.

Steps: `build-scenarios` (questions with answers -> scenarios in the reference's JSONL), `compile` (MIPROv2 over the
question asker), `evaluate` (Baseline, Discovery and Oracle on held-out scenarios) and `demo` (evaluate on the bundled
synthetic scenarios with the embedded model and a small turn budget).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefcraft.components.component import Comparison, Component, Demo, Emit, Step
from prefcraft.components.prefdisco.build import BuildJob, run_build
from prefcraft.components.prefdisco.charts import CHARTS
from prefcraft.components.prefdisco.compilation import CompileJob, run_prefdisco_compile
from prefcraft.components.prefdisco.data import SAMPLE_SCENARIOS
from prefcraft.components.prefdisco.evaluation import EvaluationJob, PrefDiscoData, run_prefdisco_evaluation
from prefcraft.flags import optimizer_config, optimizer_options
from prefcraft.optimizers.prefdisco import PROGRAM_NAME
from prefcraft.options import Count, FilePath, Options, Positive, Share, option
from prefcraft.programs.prefdisco import QuestionAsker

HELP = "PrefDisco: elicit a user's preferences by asking, then answer (build-scenarios, compile, evaluate, demo)"
RUNS = Path("runs/prefdisco")


class BuildOptions(Options):
    problems: FilePath | None = option(None, "JSONL of {task, problem_id, original_problem} rows (default: the "
                                       "bundled problems (math, science, social reasoning))")
    output: FilePath = option(RUNS / "scenarios.jsonl", "scenario JSONL to write")
    personas: Positive = option(8, "distinct personas to sample (seeded by --seed)")
    personas_per_problem: Positive = option(2, "scenarios per problem, each with another persona")
    attributes: Positive = option(2, "attributes in each sparse profile")


class _Source(Options):
    data: str | None = option(None, "stellalisy/prefq-bench or a local scenario .jsonl/.json/.parquet file "
                              "(default: the bundled SYNTHETIC scenarios)")


class _Data(Options):
    val_share: Share = option(0.25, "share of each task's problems for validation")
    test_share: Share = option(0.25, "share of each task's problems for testing")
    max_scenarios: Positive | None = option(None, "use only the first N scenarios of the split")
    per_task: Positive | None = option(None, "use only the first N scenarios of each task in the split")
    output_dir: FilePath = option(RUNS, "where results go")
    max_turns: Positive = option(5, "the asker's turn budget (questions it may ask)")

    def prefdisco_data(self) -> PrefDiscoData:
        return PrefDiscoData(source=getattr(self, "data", None) or SAMPLE_SCENARIOS, val_share=self.val_share,
                             test_share=self.test_share, max_scenarios=self.max_scenarios, per_task=self.per_task)


# Labeled demos would be raw scenarios, which hold no dialogue: none by default. A bootstrapped trace counts as a demo
# from a gated PrefAlign / 5 of 0.6.
class CompileOptions(optimizer_options(candidates=20, trials=30, bootstrapped_demos=4, labeled_demos=0,
                                       metric_threshold=0.6), _Data, _Source):
    output: FilePath = option(RUNS / "prefdisco_asker.json",
                              "compiled JSON to write; under compiled/ it is registered as the shipped asker")


class _Conditions(_Data):
    split: Literal["train", "val", "test", "all"] = option(
        "test", "which scenarios to evaluate: a split by problem within each task, or all")
    forced_questions: Count | None = option(
        None, "ask exactly this many questions (the paper's Figure 5) instead of deciding")
    collaborative: bool = option(False, "the collaborative user simulator instead of the passive one")
    compiled: FilePath | None = option(
        None, "compiled asker to compare (default: the one compiled/index.json registers for the task model, "
        "if any)")
    use_shipped: bool = option(True, "without --compiled, compare no compiled asker", flag="--no-shipped")


class EvaluateOptions(_Conditions, _Source):
    pass


class DemoOptions(_Conditions):
    per_task: Positive | None = option(1, "use only the first N scenarios of each task in the split")
    max_turns: Positive = option(2, "the asker's turn budget (questions it may ask)")


def run_build_scenarios(options: BuildOptions, settings: Any, emit: Emit) -> Any:
    job = BuildJob(problems=options.problems or BuildJob.problems, output=options.output, personas=options.personas,
                   personas_per_problem=options.personas_per_problem, attributes_per_profile=options.attributes,
                   seed=settings.seed)
    return run_build(settings, job, emit)


def run_compile(options: CompileOptions, settings: Any, emit: Emit) -> Any:
    job = CompileJob(output=options.output, data=options.prefdisco_data(), max_turns=options.max_turns,
                     config=optimizer_config(options, settings), output_dir=options.output_dir)
    return run_prefdisco_compile(settings, job, emit)


def run_evaluate(options: EvaluateOptions | DemoOptions, settings: Any, emit: Emit) -> Any:
    job = EvaluationJob(data=options.prefdisco_data(), split=options.split, max_turns=options.max_turns,
                        forced_questions=options.forced_questions, collaborative=options.collaborative,
                        compiled=options.compiled, use_shipped=options.use_shipped, output_dir=options.output_dir)
    return run_prefdisco_evaluation(settings, job, emit)


def compare(outcome: Any) -> Comparison:
    overall = [summary for summary in outcome.summaries if summary.task == "all"] or outcome.summaries
    by_condition = {summary.condition: summary.pref_align.mean for summary in overall}
    return Comparison("PrefAlign (1-5)", "baseline (no questions)", by_condition["baseline"],
                      "discovery (asks first)", by_condition["discovery"], "points")


COMPONENT = Component(
    name="prefdisco", title="PrefDisco", help=HELP,
    steps={
        "build-scenarios": Step("turn a question set with answers into PrefDisco scenarios (personas, profiles, "
                                "rubrics)", BuildOptions, run_build_scenarios),
        "compile": Step("MIPROv2 over the question asker, PrefAlign of its answer gated by correctness as the metric",
                        CompileOptions, run_compile),
        "evaluate": Step("Baseline, Discovery and Oracle on held-out scenarios: PrefAlign, NormAlign, accuracy, "
                         "questions", EvaluateOptions, run_evaluate),
        "demo": Step("evaluate 3 bundled synthetic test scenarios (one per task) on the embedded model, 2 turns",
                     DemoOptions, run_evaluate),
    },
    run_names=("prefdisco-build-scenarios", "prefdisco-compile", "prefdisco-evaluate"),
    demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: QuestionAsker(metadata["max_turns"])},
)
