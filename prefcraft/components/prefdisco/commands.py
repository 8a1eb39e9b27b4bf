"""`prefcraft prefdisco`: the PrefDisco component's command line (issue 16). Parses flags and calls the command modules.

Steps: `build-scenarios` (questions with answers -> scenarios in the reference's JSONL), `compile` (MIPROv2 over the
question asker), `evaluate` (Baseline, Discovery and Oracle on held-out scenarios) and `demo` (evaluate on the bundled
synthetic scenarios with the embedded model and a small turn budget).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step
from prefcraft.components.prefdisco.build import BuildJob, run_build
from prefcraft.components.prefdisco.charts import CHARTS
from prefcraft.components.prefdisco.compilation import CompileJob, run_prefdisco_compile
from prefcraft.components.prefdisco.data import SAMPLE_SCENARIOS
from prefcraft.components.prefdisco.evaluation import EvaluationJob, PrefDiscoData, run_prefdisco_evaluation
from prefcraft.flags import COUNT, POSITIVE, SHARE, add_optimizer_flags, optimizer_config
from prefcraft.optimizers.prefdisco import PROGRAM_NAME
from prefcraft.programs.prefdisco import QuestionAsker

HELP = "PrefDisco: elicit a user's preferences by asking, then answer (build-scenarios, compile, evaluate, demo)"
STEPS = {
    "build-scenarios": "turn a question set with answers into PrefDisco scenarios (personas, profiles, rubrics)",
    "compile": "MIPROv2 over the question asker, PrefAlign of its answer gated by correctness as the metric",
    "evaluate": "Baseline, Discovery and Oracle on held-out scenarios: PrefAlign, NormAlign, accuracy, questions",
    "demo": "evaluate 3 bundled synthetic test scenarios (one per task) on the embedded model, 2 turns",
}
RUNS = Path("runs/prefdisco")
DEMO_MAX_TURNS = 2


def _add_step_flags(step_parser: argparse.ArgumentParser, step: str) -> None:
    if step == "build-scenarios":
        _add_build_flags(step_parser)
        return
    _add_data_flags(step_parser, bundled_only=step == "demo")
    step_parser.add_argument("--output-dir", type=Path, default=RUNS, help="where results go")
    step_parser.add_argument("--max-turns", type=POSITIVE, default=DEMO_MAX_TURNS if step == "demo" else 5,
                             help="the asker's turn budget (questions it may ask)")
    if step == "compile":
        _add_compile_flags(step_parser)
        return
    step_parser.add_argument("--split", choices=["train", "val", "test", "all"], default="test",
                             help="which scenarios to evaluate: a split by problem within each task, or all")
    step_parser.add_argument("--forced-questions", type=COUNT,
                             help="ask exactly this many questions (the paper's Figure 5) instead of deciding")
    step_parser.add_argument("--collaborative", action="store_true",
                             help="the collaborative user simulator instead of the passive one")
    step_parser.add_argument("--compiled", type=Path,
                             help="compiled asker to compare (default: the one shipped for the task model)")
    step_parser.add_argument("--no-shipped", dest="use_shipped", action="store_false",
                             help="without --compiled, compare no compiled asker")


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Any:
    """Runs the step; returns its outcome."""
    if args.step == "build-scenarios":
        job = BuildJob(problems=args.problems or BuildJob.problems, output=args.output, personas=args.personas,
                       personas_per_problem=args.personas_per_problem, attributes_per_profile=args.attributes,
                       seed=settings.seed)
        return run_build(settings, job, echo)
    data = PrefDiscoData(source=getattr(args, "data", None) or SAMPLE_SCENARIOS, val_share=args.val_share,
                         test_share=args.test_share, max_scenarios=args.max_scenarios, per_task=args.per_task)
    if args.step == "compile":
        return run_prefdisco_compile(settings, CompileJob(output=args.output, data=data, max_turns=args.max_turns,
                                                          config=optimizer_config(args, settings),
                                                          output_dir=args.output_dir), echo)
    job = EvaluationJob(data=data, split=args.split, max_turns=args.max_turns, forced_questions=args.forced_questions,
                        collaborative=args.collaborative, compiled=args.compiled, use_shipped=args.use_shipped,
                        output_dir=args.output_dir)
    return run_prefdisco_evaluation(settings, job, echo)


def _add_build_flags(parser: argparse.ArgumentParser) -> None:
    from_package = "the bundled problems (math, science, social reasoning)"
    parser.add_argument("--problems", type=Path, help=f"JSONL of {{task, problem_id, original_problem}} rows "
                        f"(default: {from_package})")
    parser.add_argument("--output", type=Path, default=RUNS / "scenarios.jsonl", help="scenario JSONL to write")
    parser.add_argument("--personas", type=POSITIVE, default=8, help="distinct personas to sample (seeded by --seed)")
    parser.add_argument("--personas-per-problem", type=POSITIVE, default=2,
                        help="scenarios per problem, each with another persona")
    parser.add_argument("--attributes", type=POSITIVE, default=2, help="attributes in each sparse profile")
    parser.set_defaults(problems=None)


def _add_data_flags(parser: argparse.ArgumentParser, *, bundled_only: bool) -> None:
    if not bundled_only:
        parser.add_argument("--data", help="stellalisy/prefq-bench or a local scenario .jsonl/.json/.parquet file "
                            "(default: the bundled SYNTHETIC scenarios)")
    parser.add_argument("--val-share", type=SHARE, default=0.25, help="share of each task's problems for validation")
    parser.add_argument("--test-share", type=SHARE, default=0.25, help="share of each task's problems for testing")
    parser.add_argument("--max-scenarios", type=POSITIVE, help="use only the first N scenarios of the split")
    parser.add_argument("--per-task", type=POSITIVE, default=1 if bundled_only else None,
                        help="use only the first N scenarios of each task in the split")


def _add_compile_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", type=Path, default=RUNS / "prefdisco_asker.json",
                        help="compiled JSON to write; under compiled/ it is registered as the shipped asker")
    # Labeled demos would be raw scenarios, which hold no dialogue: 0 by default.
    add_optimizer_flags(parser, candidates=20, trials=30, bootstrapped_demos=4, labeled_demos=0)
    parser.set_defaults(metric_threshold=0.6)  # gated PrefAlign / 5 at which a bootstrapped trace counts as a demo


def compare(outcome: Any) -> Comparison:
    overall = [summary for summary in outcome.summaries if summary.task == "all"] or outcome.summaries
    by_condition = {summary.condition: summary.pref_align.mean for summary in overall}
    return Comparison("PrefAlign (1-5)", "baseline (no questions)", by_condition["baseline"],
                      "discovery (asks first)", by_condition["discovery"], "points")


COMPONENT = Component(
    name="prefdisco", title="PrefDisco", help=HELP,
    steps={step: Step(step_help, partial(_add_step_flags, step=step), run) for step, step_help in STEPS.items()},
    run_names=("prefdisco-build-scenarios", "prefdisco-compile", "prefdisco-evaluate"),
    demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: QuestionAsker(metadata["max_turns"])},
)
