"""`prefcraft lampqa`: the LaMP-QA component's steps, their options and the runs they start.

Steps: `compile` (MIPROv2 over PlanPers' planner + answerer, the aspect score as metric), `evaluate` (the methods on
held-out questions, scored by the aspect judge) and `demo` (evaluate on the bundled synthetic questions with the
embedded model, small budget).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefcraft.components.component import Comparison, Component, Demo, Emit, Step
from prefcraft.components.lampqa.charts import CHARTS
from prefcraft.components.lampqa.compilation import CompileJob, run_lampqa_compile
from prefcraft.components.lampqa.data import CONFIGS, DATA_SPLITS, SAMPLE_QUESTIONS
from prefcraft.components.lampqa.evaluation import (
    DEFAULT_METHODS,
    EvaluationJob,
    LampQAData,
    RetrievalConfig,
    run_lampqa_evaluation,
)
from prefcraft.flags import optimizer_config, optimizer_options
from prefcraft.optimizers.lampqa import PROGRAM_NAME
from prefcraft.options import FilePath, OneOrMore, Options, Positive, option
from prefcraft.programs.lampqa import DEFAULT_K, BM25Retriever, PlanPers

HELP = "LaMP-QA: aspect planner for personalized long-form answers (compile, evaluate, demo)"
Method = Literal["none", "rag", "rag_random", "planpers"]
RUNS = Path("runs/lampqa")
RETRIEVAL = "profile retrieval"


class _Source(Options):
    data: str | None = option(None, "alireza7/LaMP-QA, a folder <config>/<split>.jsonl, or one local "
                              ".jsonl/.json/.parquet file (default: the bundled SYNTHETIC sample)")


class _Data(Options):
    configs: OneOrMore[str] | None = option(
        None, "categories to use (default: all three, Art_and_Entertainment Lifestyle_and_Personal_Development "
        "Society_and_Culture)", metavar="CONFIG")
    max_questions: Positive | None = option(None, "use only the first N questions of each category")
    k: Positive = option(DEFAULT_K, "posts retrieved from the profile (the paper: 10)", group=RETRIEVAL)
    retriever: Literal["bm25", "dense"] = option(
        "bm25", "bm25 (lexical, local) or dense (embeddings from --embedding-model)", group=RETRIEVAL)
    embedding_model: str | None = option(None, "dense: litellm embedding model string, e.g. openai/<name>",
                                         group=RETRIEVAL)
    embedding_api_base: str | None = option(None, "dense: OpenAI-compatible embeddings endpoint", group=RETRIEVAL)
    output_dir: FilePath = option(RUNS, "where results go")

    def lampqa_data(self) -> LampQAData:
        return LampQAData(source=getattr(self, "data", None) or SAMPLE_QUESTIONS,
                          configs=tuple(self.configs or CONFIGS), max_questions=self.max_questions)

    def retrieval(self) -> RetrievalConfig:
        return RetrievalConfig(k=self.k, kind=self.retriever, embedding_model=self.embedding_model,
                               embedding_api_base=self.embedding_api_base)


# The paper trains its planner instead of prompting it; for a vLLM user the compile's defaults are SynthesizeMe's
# MIPROv2 budget (Appendix F). Labeled demos would be raw question rows, not planner traces: none by default.
class CompileOptions(optimizer_options(candidates=20, trials=30, bootstrapped_demos=4, labeled_demos=0), _Data,
                     _Source):
    output: FilePath = option(RUNS / "lampqa_planner.json",
                              "compiled JSON to write; under compiled/ it is registered as the shipped lampqa_planner")


class _Methods(_Data):
    methods: OneOrMore[Method] = option(
        list(DEFAULT_METHODS),
        "no personalization, RAG over the profile, RAG over a random other user's profile (seeded: the paper's "
        "control), PlanPers (plan the aspects, then answer)")
    compiled: FilePath | None = option(
        None, "compiled PlanPers to compare (default: the one compiled/index.json registers for the task model, "
        "if any)")
    use_shipped: bool = option(True, "without --compiled, compare no compiled PlanPers", flag="--no-shipped")


class EvaluateOptions(_Methods, _Source):
    split: Literal["train", "val", "test"] = option("test", "which questions to answer",
                                                    renamed={"validation": "val"})


class DemoOptions(_Methods):
    """3 test questions, 5 posts each: about 70 LM calls."""

    max_questions: Positive | None = option(1, "use only the first N questions of each category")
    k: Positive = option(5, "posts retrieved from the profile (the paper: 10)", group=RETRIEVAL)


def run_compile(options: CompileOptions, settings: Any, emit: Emit) -> Any:
    job = CompileJob(output=options.output, data=options.lampqa_data(), config=optimizer_config(options, settings),
                     retrieval=options.retrieval(), output_dir=options.output_dir)
    return run_lampqa_compile(settings, job, emit)


def run_evaluate(options: EvaluateOptions | DemoOptions, settings: Any, emit: Emit) -> Any:
    job = EvaluationJob(data=options.lampqa_data(), split=DATA_SPLITS[getattr(options, "split", "test")],
                        methods=options.methods,
                        compiled=options.compiled, use_shipped=options.use_shipped, retrieval=options.retrieval(),
                        output_dir=options.output_dir)
    return run_lampqa_evaluation(settings, job, emit)


def compare(outcome: Any) -> Comparison:
    return Comparison("aspect score", "no personalization", outcome.methods["none"].report.overall.mean,
                      "PlanPers (plan, then answer)", outcome.methods["planpers"].report.overall.mean, "points")


COMPONENT = Component(
    name="lampqa", title="LaMP-QA", help=HELP,
    steps={
        "compile": Step("MIPROv2 over PlanPers (planner + answerer) against the aspect score", CompileOptions,
                        run_compile),
        "evaluate": Step("no personalization, RAG (over the user's or a random user's profile) and PlanPers (and a "
                         "compiled PlanPers) on held-out questions",
                         EvaluateOptions, run_evaluate),
        "demo": Step("evaluate on the bundled SYNTHETIC questions with the embedded model, small budget",
                     DemoOptions, run_evaluate),
    },
    run_names=("lampqa-compile", "lampqa-evaluate"), demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: PlanPers(BM25Retriever(metadata.get("k", DEFAULT_K)))},
)
