"""The CUPID steps' options: each step's job, read directly by its work (`compilation`, `evaluation`); its flags,
experiment options and `prefcraft.run` arguments are made from it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from prefcraft.components.cupid.data import SAMPLE_INSTANCES
from prefcraft.optimizers.options import optimizer_options
from prefcraft.options import Count, FilePath, OneOrMore, Options, Positive, SampleSource, SplitOrAll, option
from prefcraft.programs.cupid import InferrerVariant, JudgePrompt

# "baseline": no user context (formerly "none", still taken for one release); "sessions": the paper's generation task
DEFAULT_RESPONSE_METHODS = ("baseline", "sessions", "inferred", "gold")
ContextOverflow = Literal["zero", "leave-out"]
VARIANT_HELP = ("inferrer: all sessions at once, the relevant sessions selected first (one more call), the log "
                "summarised first, session by session (one more call: the paper's summaries), or the same summaries "
                "one call per session (for a small context window)")


class _Source(Options):
    data: str | None = option(None, "kixlab/CUPID, kixlab/CUPID-Unverified or a local .jsonl/.json/.parquet file "
                              "(default: the bundled SYNTHETIC sample)")


class DataOptions(SampleSource):
    """Which instances a step reads: a file or hub dataset, split by persona."""

    sample: ClassVar[Path] = SAMPLE_INSTANCES

    val_personas: Count = option(2, "personas held out for validation")
    test_personas: Count = option(2, "personas held out for testing")
    max_instances: Positive | None = option(
        None, "use only the first N instances of the split (default: every instance)")
    skip_invalid: bool = option(False, "skip (and count) rows that break the schema instead of stopping at the first")
    output_dir: FilePath = option(Path("runs/cupid"), "where results go")


class CompileOptions(optimizer_options(candidates=20, trials=30, bootstrapped_demos=4, labeled_demos=4), DataOptions,
                     _Source):
    renamed_options: ClassVar[dict[str, str]] = {"variant": "inferrer"}
    inferrer: InferrerVariant = option("all", VARIANT_HELP)
    output: FilePath = option(Path("runs/cupid/cupid_inferrer.json"),
                              "where the compiled inferrer goes, won or lost (the verdict in its "
                              "metadata); under compiled/ a winner is registered as the shipped inferrer")


class _Judging(DataOptions):
    renamed_options: ClassVar[dict[str, str]] = {"variants": "inferrers"}
    inferrers: OneOrMore[InferrerVariant] = option(["all"], VARIANT_HELP)
    compiled: FilePath | None = option(
        None, "compiled inferrer to compare: a JSON file or an MLflow model URI (models:/<name>@champion) (default: "
        "the one compiled/index.json registers for the task model, if any)")
    use_shipped: bool = option(True, "without --compiled, compare no compiled inferrer", flag="--no-shipped")
    split: SplitOrAll = option(
        "test", "which instances to evaluate: a split by persona (the test personas by default), or all of them, "
        "no persona split (the paper's tables: a zero-shot inferrer is trained on nothing)")
    responses: list[Literal["baseline", "sessions", "summaries", "summaries-per-session", "inferred", "gold"]] = option(
        list(DEFAULT_RESPONSE_METHODS), "response methods to generate and judge (none given: inference only): the "
        "baseline (no user context), the prior sessions (the paper's), their summaries (the paper's Table 10; per "
        "session: one call each), the inferred preference, the gold preference (the paper's oracle)",
        renamed={"none": "baseline"})
    oracle_sessions: bool = option(False, "the paper's oracle setting: give the inferrer and the responses from "
                                   "sessions or summaries only the prior sessions that share the current preference "
                                   "(gold)")
    judge_prompt: JudgePrompt = option(
        "reference", "the response judge's prompt: the reference code's (a label for each score 1-10, the label "
        "given before the score) or the paper's Figure 16 (1 very poor to 10 completely perfect, no labels)")
    context_overflow: ContextOverflow = option(
        "zero", "an instance whose prompt is over the task model's context window: kept and scored as the reference "
        "code scores it (an empty checklist, so recall 0; its response judged 0), or left out of the scores; counted "
        "either way")


class EvaluateOptions(_Judging, _Source):
    pass


class DemoOptions(_Judging):
    """Evaluate on the bundled sample, one persona's three instances."""

    max_instances: Positive | None = option(3, "use only the first N instances of the split")


JudgingOptions = EvaluateOptions | DemoOptions
