"""`prefcraft cupid`: the CUPID component's command line (issue 17). Parses flags and calls the command modules.

Steps: `compile` (MIPROv2 over the preference inferrer), `evaluate` (inference P / R / F1 and response scores on
held-out instances) and `demo` (both on the bundled synthetic data with the embedded model, small budget).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step
from prefcraft.components.cupid.charts import CHARTS
from prefcraft.components.cupid.compilation import CompileJob, run_cupid_compile
from prefcraft.components.cupid.data import SAMPLE_INSTANCES
from prefcraft.components.cupid.evaluation import (
    DEFAULT_RESPONSE_METHODS,
    CupidData,
    EvaluationJob,
    run_cupid_evaluation,
)
from prefcraft.flags import COUNT, POSITIVE, add_optimizer_flags, optimizer_config
from prefcraft.optimizers.cupid import PROGRAM_NAME
from prefcraft.programs.cupid import PreferenceInferrer

HELP = "CUPID: infer a user's contextual preference from prior sessions (compile, evaluate, demo)"
STEPS = {
    "compile": "optimize the preference inferrer (MIPROv2 by default), F1 (decomposer + matcher) as the metric",
    "evaluate": "P / R / F1 of inferred preferences and judge scores of responses on held-out instances",
    "demo": "evaluate on the bundled synthetic instances with the embedded model, small budget",
}
# One persona's three instances, and a per-call timeout for a loaded 2-core machine: about 10 minutes here.
DEMO_DEFAULTS = {"max_instances": 3, "task_timeout_s": 600.0}
VARIANTS = ("all", "relevant", "summaries")
VARIANT_HELP = ("inferrer: all sessions at once, the relevant sessions selected first (one more call), or each "
                "session summarised first (one more call per session)")


def _add_step_flags(step_parser: argparse.ArgumentParser, step: str) -> None:
    _add_data_flags(step_parser, bundled_only=step == "demo")
    step_parser.add_argument("--output-dir", type=Path, default=Path("runs/cupid"), help="where results go")
    if step == "demo":
        step_parser.set_defaults(**DEMO_DEFAULTS)
    if step == "compile":
        step_parser.add_argument("--variant", choices=VARIANTS, default="all", help=VARIANT_HELP)
        _add_compile_flags(step_parser)
    else:
        step_parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=["all"], help=VARIANT_HELP)
        step_parser.add_argument("--compiled", type=Path,
                                 help="compiled inferrer to compare (default: the one shipped for the task model)")
        step_parser.add_argument("--no-shipped", dest="use_shipped", action="store_false",
                                 help="without --compiled, compare no compiled inferrer")
        step_parser.add_argument("--split", choices=["train", "val", "test", "all"], default="test",
                                 help="which instances to evaluate: a split by persona, or all of them")
        step_parser.add_argument("--responses", nargs="*", choices=["none", "sessions", "inferred", "gold"],
                                 default=list(DEFAULT_RESPONSE_METHODS),
                                 help="response methods to generate and judge (none given: inference only)")


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Any:
    """Runs the step; returns its outcome."""
    data = CupidData(source=getattr(args, "data", None) or SAMPLE_INSTANCES, val_personas=args.val_personas,
                     test_personas=args.test_personas, skip_invalid=args.skip_invalid, max_instances=args.max_instances)
    if args.step == "compile":
        job = CompileJob(output=args.output, data=data, variant=args.variant, config=optimizer_config(args, settings),
                         output_dir=args.output_dir)
        return run_cupid_compile(settings, job, echo)
    job = EvaluationJob(data=data, variants=args.variants, compiled=args.compiled, split=args.split,
                        use_shipped=args.use_shipped, response_methods=args.responses, output_dir=args.output_dir)
    return run_cupid_evaluation(settings, job, echo)


def _add_data_flags(parser: argparse.ArgumentParser, *, bundled_only: bool) -> None:
    if not bundled_only:
        parser.add_argument("--data", help="kixlab/CUPID, kixlab/CUPID-Unverified or a local .jsonl/.json/.parquet "
                            "file (default: the bundled SYNTHETIC sample)")
    parser.add_argument("--val-personas", type=COUNT, default=2, help="personas held out for validation")
    parser.add_argument("--test-personas", type=COUNT, default=2, help="personas held out for testing")
    parser.add_argument("--max-instances", type=POSITIVE, help="use only the first N instances of the split")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="skip (and count) rows that break the schema instead of stopping at the first")


def _add_compile_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", type=Path, default=Path("runs/cupid/cupid_inferrer.json"),
                        help="compiled JSON to write; under compiled/ it is registered as the shipped inferrer")
    add_optimizer_flags(parser, candidates=20, trials=30, bootstrapped_demos=4, labeled_demos=4)


def compare(outcome: Any) -> Comparison:
    scores = {response.method: response.score.mean for response in outcome.responses}
    return Comparison("response score (judge, 1-10)", "no preference", scores["none"], "inferred preference",
                      scores["inferred"], "points")


COMPONENT = Component(
    name="cupid", title="CUPID", help=HELP,
    steps={step: Step(step_help, partial(_add_step_flags, step=step), run) for step, step_help in STEPS.items()},
    run_names=("cupid-compile", "cupid-evaluate"), demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: PreferenceInferrer(metadata.get("variant", "relevant"))},
)
