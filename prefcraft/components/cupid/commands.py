"""`prefcraft cupid`: the CUPID component's steps, their options and the runs they start.

Steps: `compile` (MIPROv2 over the preference inferrer), `evaluate` (inference P / R / F1 and response scores on
held-out instances) and `demo` (both on the bundled synthetic data with the embedded model, small budget).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefcraft.components.component import Comparison, Component, Demo, Emit, Step
from prefcraft.components.cupid.charts import CHARTS
from prefcraft.components.cupid.compilation import CompileJob, run_cupid_compile
from prefcraft.components.cupid.data import SAMPLE_INSTANCES
from prefcraft.components.cupid.evaluation import (
    DEFAULT_RESPONSE_METHODS,
    CupidData,
    EvaluationJob,
    run_cupid_evaluation,
)
from prefcraft.flags import optimizer_config, optimizer_options
from prefcraft.optimizers.cupid import PROGRAM_NAME
from prefcraft.options import Count, FilePath, OneOrMore, Options, Positive, option
from prefcraft.programs.cupid import InferrerVariant, PreferenceInferrer

HELP = "CUPID: infer a user's contextual preference from prior sessions (compile, evaluate, demo)"
VARIANT_HELP = ("inferrer: all sessions at once, the relevant sessions selected first (one more call), the log "
                "summarised first, session by session (one more call: the paper's summaries), or the same summaries "
                "one call per session (for a small context window)")


class _Source(Options):
    data: str | None = option(None, "kixlab/CUPID, kixlab/CUPID-Unverified or a local .jsonl/.json/.parquet file "
                              "(default: the bundled SYNTHETIC sample)")


class _Data(Options):
    val_personas: Count = option(2, "personas held out for validation")
    test_personas: Count = option(2, "personas held out for testing")
    max_instances: Positive | None = option(None, "use only the first N instances of the split")
    skip_invalid: bool = option(False, "skip (and count) rows that break the schema instead of stopping at the first")
    output_dir: FilePath = option(Path("runs/cupid"), "where results go")

    def cupid_data(self) -> CupidData:
        return CupidData(source=getattr(self, "data", None) or SAMPLE_INSTANCES, val_personas=self.val_personas,
                         test_personas=self.test_personas, skip_invalid=self.skip_invalid,
                         max_instances=self.max_instances)


class CompileOptions(optimizer_options(candidates=20, trials=30, bootstrapped_demos=4, labeled_demos=4), _Data,
                     _Source):
    variant: InferrerVariant = option("all", VARIANT_HELP)
    output: FilePath = option(Path("runs/cupid/cupid_inferrer.json"),
                              "compiled JSON to write; under compiled/ it is registered as the shipped inferrer")


class _Judging(_Data):
    variants: OneOrMore[InferrerVariant] = option(["all"], VARIANT_HELP)
    compiled: FilePath | None = option(
        None, "compiled inferrer to compare (default: the one compiled/index.json registers for the task model, "
        "if any)")
    use_shipped: bool = option(True, "without --compiled, compare no compiled inferrer", flag="--no-shipped")
    split: Literal["train", "val", "test", "all"] = option(
        "test", "which instances to evaluate: a split by persona, or all of them")
    responses: list[Literal["none", "sessions", "summaries", "summaries-per-session", "inferred", "gold"]] = option(
        list(DEFAULT_RESPONSE_METHODS), "response methods to generate and judge (none given: inference only): no "
        "user context, the prior sessions (the paper's), their summaries (the paper's Table 10; per session: one call "
        "each), the inferred preference, the gold preference (the paper's oracle)")
    oracle_sessions: bool = option(False, "the paper's oracle setting: give the inferrer and the responses from "
                                   "sessions or summaries only the prior sessions that share the current preference "
                                   "(gold)")


class EvaluateOptions(_Judging, _Source):
    pass


class DemoOptions(_Judging):
    """Evaluate on the bundled sample, one persona's three instances."""

    max_instances: Positive | None = option(3, "use only the first N instances of the split")


def run_compile(options: CompileOptions, settings: Any, emit: Emit) -> Any:
    job = CompileJob(output=options.output, data=options.cupid_data(), variant=options.variant,
                     config=optimizer_config(options, settings), output_dir=options.output_dir)
    return run_cupid_compile(settings, job, emit)


def run_evaluate(options: EvaluateOptions, settings: Any, emit: Emit) -> Any:
    job = EvaluationJob(data=options.cupid_data(), variants=options.variants, compiled=options.compiled,
                        split=options.split, use_shipped=options.use_shipped, response_methods=options.responses,
                        output_dir=options.output_dir, oracle_sessions=options.oracle_sessions)
    return run_cupid_evaluation(settings, job, emit)


def compare(outcome: Any) -> Comparison:
    scores = {response.method: response.score.mean for response in outcome.responses}
    return Comparison("response score (judge, 1-10)", "no preference", scores["none"], "inferred preference",
                      scores["inferred"], "points")


COMPONENT = Component(
    name="cupid", title="CUPID", help=HELP,
    steps={
        "compile": Step("optimize the preference inferrer (MIPROv2 by default), F1 (decomposer + matcher) as the "
                        "metric", CompileOptions, run_compile),
        "evaluate": Step("P / R / F1 of inferred preferences and judge scores of responses on held-out instances",
                         EvaluateOptions, run_evaluate),
        "demo": Step("evaluate on the bundled synthetic instances with the embedded model, small budget",
                     DemoOptions, run_evaluate,
                     settings_defaults={"task_timeout_s": 600.0}),  # a loaded 2-core machine: about 10 minutes here
    },
    run_names=("cupid-compile", "cupid-evaluate"), demo=Demo(lambda _: ["demo"], compare), sweepable=True,
    charts=CHARTS,
    programs={PROGRAM_NAME: lambda metadata: PreferenceInferrer(metadata.get("variant", "relevant"))},
)
