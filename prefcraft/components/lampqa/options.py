"""The LaMP-QA steps' options: each step's job, read directly by its work (`compilation`, `evaluation`); its flags,
experiment options and `prefcraft.run` arguments are made from it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from prefcraft.components.lampqa.data import DATA_SPLITS, SAMPLE_QUESTIONS
from prefcraft.optimizers.options import optimizer_options
from prefcraft.options import Count, FilePath, OneOrMore, Options, Positive, SampleSource, Split, option
from prefcraft.programs.lampqa import ANSWER_RETRIES, DEFAULT_K, JUDGE_RETRIES, PLANPERS_RETRIES, Similarity

Method = Literal["baseline", "rag", "rag_random", "planpers"]
DEFAULT_METHODS = ("baseline", "rag", "planpers")
RETRIEVAL = "profile retrieval"
RETRIES = "replies that do not parse"
CONTRIEVER_MAX_TOKENS = 512  # the reference's tokenizer cuts every text at Contriever's input limit


class _Source(Options):
    data: str | None = option(None, "alireza7/LaMP-QA, a folder <config>/<split>.jsonl, or one local "
                              ".jsonl/.json/.parquet file (default: the bundled SYNTHETIC sample)")


class DataOptions(SampleSource):
    """Which questions a step reads (a folder laid out like the hub dataset, one local file, or the hub name; the
    first N of each category), how it retrieves from a profile, how often it asks again for a reply that does not
    parse, and where its results go."""

    sample: ClassVar[Path] = SAMPLE_QUESTIONS
    renamed_options: ClassVar[dict[str, str]] = {"configs": "categories"}

    categories: OneOrMore[str] | None = option(
        None, "categories to use (default: all three, Art_and_Entertainment Lifestyle_and_Personal_Development "
        "Society_and_Culture)", metavar="CATEGORY")
    max_questions: Positive | None = option(
        None, "use only the first N questions of each category (default: every question)")
    k: Positive = option(DEFAULT_K, "posts retrieved from the profile (the paper: 10)", group=RETRIEVAL)
    retriever: Literal["bm25", "dense"] = option(
        "bm25", "bm25 (lexical, local) or dense (embeddings from --embedding-model)", group=RETRIEVAL)
    embedding_model: str | None = option(
        None, "dense: litellm embedding model string, e.g. openai/<name> (default: none; dense retrieval needs it)",
        group=RETRIEVAL)
    embedding_api_base: str | None = option(
        None, "dense: OpenAI-compatible embeddings endpoint (default: none, litellm's own for the model)",
        group=RETRIEVAL)
    embedding_similarity: Similarity = option(
        "dot", "dense: rank by the raw dot product of the embeddings (the reference's, for Contriever's unnormalized "
        "vectors) or by cosine", group=RETRIEVAL)
    embedding_max_tokens: Count = option(
        CONTRIEVER_MAX_TOKENS, "dense: the embeddings server cuts each text to its first N tokens, with the model's "
        "own tokenizer (vLLM's truncate_prompt_tokens field; the reference: 512, Contriever's limit); 0 sends no "
        "such field, for an endpoint that refuses it", group=RETRIEVAL)
    answer_retries: Count | None = option(
        None, "times an answer or a plan is asked for again while its reply does not parse, 0.1 warmer each time, up "
        f"to 1.0 (default: the reference's, {ANSWER_RETRIES} for the baseline and RAG, {PLANPERS_RETRIES} for "
        "PlanPers)",
        group=RETRIES)
    judge_retries: Count = option(
        JUDGE_RETRIES, "times a judgment is asked for again while its reply does not parse, 0.1 warmer each time, up "
        f"to 1.0 (the reference: {JUDGE_RETRIES})", group=RETRIES)
    output_dir: FilePath = option(Path("runs/lampqa"), "where results go")

    def retries_for(self, method_retries: int) -> int:
        """An answer's retries: `answer_retries` when given, else the method's own (the reference's)."""
        return method_retries if self.answer_retries is None else self.answer_retries


# The paper trains its planner instead of prompting it; for a vLLM user the compile's defaults are SynthesizeMe's
# MIPROv2 budget (Appendix F). Labeled demos would be raw question rows, not planner traces: none by default.
class CompileOptions(optimizer_options(candidates=20, trials=30, bootstrapped_demos=4, labeled_demos=0), DataOptions,
                     _Source):
    output: FilePath = option(Path("runs/lampqa/lampqa_planner.json"),
                              "where the compiled lampqa_planner goes, won or lost (the verdict in its "
                              "metadata); under compiled/ a winner is registered as the shipped lampqa_planner")


class _Methods(DataOptions):
    methods: OneOrMore[Method] = option(
        list(DEFAULT_METHODS),
        "baseline (no personalization: the question alone), RAG over the profile, RAG over a random other user's "
        "profile (seeded: the paper's control), PlanPers (plan the aspects, then answer)", renamed={"none": "baseline"})
    compiled: FilePath | None = option(
        None, "compiled PlanPers to compare: a JSON file or an MLflow model URI (models:/<name>@champion) (default: "
        "the one compiled/index.json registers for the task model, if any)")
    use_shipped: bool = option(True, "without --compiled, compare no compiled PlanPers", flag="--no-shipped")

    @property
    def questions_split(self) -> str:
        """The dataset's split the step answers: `--split`'s, or the test split for a step without it (the demo)."""
        return DATA_SPLITS[getattr(self, "split", "test")]


class EvaluateOptions(_Methods, _Source):
    split: Split = option("test", "which questions to answer",
                                                    renamed={"validation": "val"})


class DemoOptions(_Methods):
    """3 test questions, 5 posts each: about 70 LM calls."""

    max_questions: Positive | None = option(1, "use only the first N questions of each category")
    k: Positive = option(5, "posts retrieved from the profile (the paper: 10)", group=RETRIEVAL)


MethodOptions = EvaluateOptions | DemoOptions
