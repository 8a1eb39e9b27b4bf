"""`prefcraft lampqa`: the LaMP-QA component's command line (issue 18). Parses flags and calls the command modules.

Steps: `compile` (MIPROv2 over PlanPers' planner + answerer, the aspect score as metric), `evaluate` (the methods on
held-out questions, scored by the aspect judge) and `demo` (evaluate on the bundled synthetic questions with the
embedded model, small budget).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step
from prefcraft.components.lampqa.charts import CHARTS
from prefcraft.components.lampqa.compilation import CompileJob, run_lampqa_compile
from prefcraft.components.lampqa.data import CONFIGS, SAMPLE_QUESTIONS
from prefcraft.components.lampqa.evaluation import EvaluationJob, LampQAData, RetrievalConfig, run_lampqa_evaluation
from prefcraft.flags import POSITIVE, add_optimizer_flags, optimizer_config
from prefcraft.optimizers.lampqa import PROGRAM_NAME
from prefcraft.programs.lampqa import DEFAULT_K, BM25Retriever, PlanPers

HELP = "LaMP-QA: aspect planner for personalized long-form answers (compile, evaluate, demo)"
STEPS = {
    "compile": "MIPROv2 over PlanPers (planner + answerer) against the aspect score",
    "evaluate": "no personalization, RAG and PlanPers (and a compiled PlanPers) on held-out questions",
    "demo": "evaluate on the bundled SYNTHETIC questions with the embedded model, small budget",
}
METHODS = ["none", "rag", "planpers"]
RUNS = Path("runs/lampqa")
# The paper trains its planner instead of prompting it; for a vLLM user the compile's defaults are SynthesizeMe's
# MIPROv2 budget (Appendix F).
DEMO = {"max_questions": 1, "k": 5}  # 3 test questions, 5 posts each: about 70 LM calls


def _add_step_flags(step_parser: argparse.ArgumentParser, step: str) -> None:
    _add_data_flags(step_parser, bundled_only=step == "demo")
    step_parser.add_argument("--output-dir", type=Path, default=RUNS, help="where results go")
    if step == "compile":
        _add_compile_flags(step_parser)
        return
    step_parser.add_argument("--methods", nargs="+", choices=METHODS, default=METHODS,
                             help="no personalization, RAG over the profile, PlanPers (plan the aspects, then "
                             "answer)")
    step_parser.add_argument("--compiled", type=Path,
                             help="compiled PlanPers to compare (default: the one shipped for the task model)")
    step_parser.add_argument("--no-shipped", dest="use_shipped", action="store_false",
                             help="without --compiled, compare no compiled PlanPers")
    if step == "evaluate":
        step_parser.add_argument("--split", choices=["train", "validation", "test"], default="test",
                                 help="which questions to answer")
    else:
        step_parser.set_defaults(**DEMO)


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Any:
    """Runs the step; returns its outcome."""
    data = LampQAData(source=getattr(args, "data", None) or SAMPLE_QUESTIONS, configs=tuple(args.configs or CONFIGS),
                      max_questions=args.max_questions)
    retrieval = RetrievalConfig(k=args.k, kind=args.retriever, embedding_model=args.embedding_model,
                                embedding_api_base=args.embedding_api_base)
    if args.step == "compile":
        job = CompileJob(output=args.output, data=data, config=optimizer_config(args, settings), retrieval=retrieval,
                         output_dir=args.output_dir)
        return run_lampqa_compile(settings, job, echo)
    job = EvaluationJob(data=data, split=getattr(args, "split", "test"), methods=args.methods, compiled=args.compiled,
                        use_shipped=args.use_shipped, retrieval=retrieval, output_dir=args.output_dir)
    return run_lampqa_evaluation(settings, job, echo)


def _add_data_flags(parser: argparse.ArgumentParser, *, bundled_only: bool) -> None:
    if not bundled_only:
        parser.add_argument("--data", help="alireza7/LaMP-QA, a folder <config>/<split>.jsonl, or one local "
                            ".jsonl/.json/.parquet file (default: the bundled SYNTHETIC sample)")
    parser.add_argument("--configs", nargs="+", metavar="CONFIG",
                        help="categories to use (default: all three, Art_and_Entertainment "
                        "Lifestyle_and_Personal_Development Society_and_Culture)")
    parser.add_argument("--max-questions", type=POSITIVE, help="use only the first N questions of each category")
    group = parser.add_argument_group("profile retrieval")
    group.add_argument("--k", type=POSITIVE, default=10, help="posts retrieved from the profile (the paper: 10)")
    group.add_argument("--retriever", choices=["bm25", "dense"], default="bm25",
                       help="bm25 (lexical, local) or dense (embeddings from --embedding-model)")
    group.add_argument("--embedding-model", help="dense: litellm embedding model string, e.g. openai/<name>")
    group.add_argument("--embedding-api-base", help="dense: OpenAI-compatible embeddings endpoint")


def _add_compile_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", type=Path, default=RUNS / "lampqa_planner.json",
                        help="compiled JSON to write; under compiled/ it is registered as the shipped lampqa_planner")
    add_optimizer_flags(parser, candidates=20, trials=30, bootstrapped_demos=4,
                        labeled_demos=0)  # labeled demos would be raw question rows, not planner traces


def compare(outcome: Any) -> Comparison:
    return Comparison("aspect score", "no personalization", outcome.methods["none"].report.overall.mean,
                      "PlanPers (plan, then answer)", outcome.methods["planpers"].report.overall.mean, "points")


COMPONENT = Component(
    name="lampqa", title="LaMP-QA", help=HELP,
    steps={step: Step(step_help, partial(_add_step_flags, step=step), run) for step, step_help in STEPS.items()},
    run_names=("lampqa-compile", "lampqa-evaluate"), demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: PlanPers(BM25Retriever(metadata.get("k", DEFAULT_K)))},
)
