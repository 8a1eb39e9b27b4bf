"""The SynthesizeMe steps' options: each step's job, read directly by its work (`fit`, `evaluation`,
`compile_persona`, `released_prompt`, `demo`); its flags, experiment options and `prefcraft.run` arguments are made
from it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from prefcraft.components.synthesizeme.judge_sets import ValidationOrders
from prefcraft.components.synthesizeme.population import TABLE_POPULATION, Population
from prefcraft.components.synthesizeme.rerank import Tournament
from prefcraft.components.synthesizeme.samples import DEMO_USERS, SAMPLE_USERS
from prefcraft.executors import Executor, ExecutorOptions
from prefcraft.optimizers.candidate_search import SearchStrategy
from prefcraft.optimizers.options import optimizer_options
from prefcraft.optimizers.synthesizeme import Step3Traces, SynthesizeMeConfig, Verification
from prefcraft.options import FilePath, OneOrMore, Options, Positive, SampleSource, Split, option
from prefcraft.settings import Settings

PersonaScore = Literal["improvement", "accuracy"]
DEMO_SEARCH_SIZE = 2  # n and m for the demo: the paper's 10 would take the main job past 15 minutes on 2 cores
FITTED_DIR = Path("runs/fitted")  # where fit writes the users' judges and evaluate reads them


class _Data(SampleSource):
    sample: ClassVar[Path] = SAMPLE_USERS

    data: str | None = option(None, "PersonalRewardBench file (.jsonl/.json/.parquet) or Hugging Face dataset name "
                              "(default: the bundled synthetic sample users)")
    users: OneOrMore[str] | None = option(None, "user ids to include (default: all)")
    population: Population = option(
        TABLE_POPULATION, "which of the benchmark's user splits to read from a Hugging Face dataset or a local folder "
        "of its split files: the test users (the paper's Table 3), the train or validation users (val: the dataset's "
        "validation split), or all; a single file is read whole", renamed={"validation": "val"})

    @property
    def selected_users(self) -> list[str] | None:
        """The users the step reads (None: all)."""
        return self.users


class _Judged(_Data):
    split: Split = option("test", "which pairs to judge")
    output_dir: FilePath = option(Path("runs/latest"), "where result files go")


class _Search(Options):
    renamed_options: ClassVar[dict[str, str]] = {"validation": "val_orders"}

    subsets: Positive = option(
        SynthesizeMeConfig.num_persona_subsets,
        "n: random candidate trace subsets for the persona (besides the unshuffled and labeled-only ones)")
    demo_candidates: Positive = option(
        SynthesizeMeConfig.num_demo_candidates,
        "m: random candidate demo sets (besides no demos, the unshuffled and the labeled-only ones)")
    max_demos: Positive | None = option(
        SynthesizeMeConfig.max_demos,
        "most demos in a fitted user's judge, reasoned and labeled together (default: every verified train pair may "
        "be one, as in the paper; with the small-model profile on, its max_demos)")
    search: SearchStrategy = option(
        SynthesizeMeConfig.search,
        "how candidates are scored: the first to reach 0.8 on the validation judgments wins, else the most accurate "
        "(the paper), found with the calls that cannot change the choice left out (exact) or with every candidate "
        "scored on every judgment (exhaustive: the same winner, every score in the record); or successive halving "
        "(fewer calls still; the winner can differ)")
    verification: Verification = option(
        SynthesizeMeConfig.verification,
        "step 1 keeps a train pair judged right in the one order it is shown in (the paper), or only one judged right "
        "in both orders, with demo sets balanced by order (a guard against position bias; one more call per train "
        "pair)")
    step3_traces: Step3Traces = option(
        SynthesizeMeConfig.step3_traces,
        "step 3's demos: bootstrap the train pairs again with the persona (the paper), or reuse step 1's traces, "
        "written without it (one bootstrap pass fewer)")
    val_orders: ValidationOrders = option(
        "one_order", "candidates are scored on each validation pair once, in the order its data row shows it (the "
        "reference code), or in both orders (twice the calls; can choose another candidate)")

    def search_config(self, settings: Settings) -> SynthesizeMeConfig:
        return SynthesizeMeConfig(num_persona_subsets=self.subsets, num_demo_candidates=self.demo_candidates,
                                  max_demos=demo_cap(settings, self.max_demos), search=self.search,
                                  verification=self.verification, step3_traces=self.step3_traces,
                                  num_threads=settings.threads, seed=settings.seed)


class _Fit(_Search):
    persona_prompt: FilePath | None = option(
        None, "compiled persona prompt: a JSON file or an MLflow model URI (models:/<name>@champion) (default: the "
        "one compiled/index.json registers for the task model, if any, else the uncompiled prompt)")
    fitted_dir: FilePath = option(FITTED_DIR, "where fitted users go")


class FitOptions(ExecutorOptions, _Fit, _Data):
    pass


class CompilePersonaOptions(optimizer_options(
        candidates=20, trials=30, bootstrapped_demos=10, labeled_demos=6, metric_threshold=None,
        threshold_help=" (default: the persona metric's own: any improvement over the baseline judge, or an accuracy "
        "of 0.5)", budget_from="SynthesizeMe, App. F"), _Search, SampleSource):
    sample: ClassVar[Path] = SAMPLE_USERS

    data: str | None = option(None, "PersonalRewardBench file or dataset name (default: sample users)")
    train_users: OneOrMore[str] = option(..., "users whose traces the persona prompt is optimized on",
                                         metavar="USER")
    val_users: OneOrMore[str] = option(..., "users the candidate prompts are scored on (none of the training users)",
                                       metavar="USER")
    output: FilePath = option(..., "where the compiled persona prompt goes, won or lost (the verdict in its "
                              "metadata); under compiled/ a winner is registered as fit's default")
    persona_metric: PersonaScore = option(
        "improvement", "how a candidate prompt's personas are scored: the persona judge's accuracy on each user's "
        "target (test) pairs, both orders, less the baseline judge's on the same pairs (the paper, App. F), or its "
        "absolute accuracy on each user's within-user validation pairs (no test pairs read, no baseline calls)")


DemographicsJudge = Literal["dong", "persona_judge"]


class EvaluateOptions(ExecutorOptions, _Judged):
    methods: OneOrMore[str] = option(
        ["baseline"], "baseline (no user context: the paper's Default), demographics, memory, demos, persona, "
        "synthesizeme", renamed={"default": "baseline"})
    fitted_dir: FilePath = option(FITTED_DIR, "fitted users' JSON files")
    demographics: str | None = option(
        None, "user profiles for the demographics method: the PRISM survey, Hugging Face dataset "
        "HannahRoseKirk/prism-alignment (config survey), or a local .jsonl/.json/.parquet copy (default: none; the "
        "demographics method needs it)",
        metavar="FILE_OR_DATASET")
    demographics_judge: DemographicsJudge = option(
        "dong", "the demographics method's judge: Dong et al.'s prompt, a choice of A or B with a certainty and no "
        "reasoning (the paper's), or the chain-of-thought judge with the profile in its instructions as the persona "
        "judge has its persona")
    allow_fitted_pairs: bool = option(
        False, "score demos, persona, synthesizeme and memory on --split train or val, the pairs they learned from "
        "(optimistic: for debugging, not for reporting)")


class DemoOptions(_Fit, _Judged):
    users: OneOrMore[str] | None = option(None, "user ids to fit and judge (default: the three demo users, "
                                          f"{', '.join(DEMO_USERS)}; with --data, all)")
    subsets: Positive = option(DEMO_SEARCH_SIZE, "n: random candidate trace subsets for the persona (besides the "
                               "unshuffled and labeled-only ones)")
    demo_candidates: Positive = option(DEMO_SEARCH_SIZE, "m: random candidate demo sets (besides no demos, the "
                                       "unshuffled and the labeled-only ones)")
    # Another default than fit's (exact), deliberately: halving, in a tour that has to stay under 15 minutes. Its rungs
    # take at most 18 and 20 calls for the 4 and 5 candidates of 8 judgments a demo fit searches. The paper's rule,
    # even decided exactly, needs the first one's 8 and, when every candidate scores 4 of 8 (as nearly all of a 135M
    # judge's do), at least 4 of each later one's: 20 and 24 at least.
    search: SearchStrategy = option(
        "halving", "how candidates are scored: successive halving (the demo's default: fewer calls; the winner can "
        "differ), or the paper's rule, the first to reach 0.8 winning, decided with the calls that cannot change the "
        "choice left out (exact) or with every candidate on every validation judgment (exhaustive)")
    # Not options: the demo fits and judges here, and only on the test split (the fitted judges learned from the
    # others, which evaluate scores only with --allow-fitted-pairs).
    split: ClassVar[Literal["test"]] = "test"
    executor: ClassVar[Executor] = "local"
    address: ClassVar[str | None] = None
    allow_fitted_pairs: ClassVar[bool] = False

    @property
    def selected_users(self) -> list[str] | None:
        return self.users or (None if self.data else DEMO_USERS)


class ImportPersonaPromptOptions(Options):
    released: FilePath = option(..., "a persona program released with the SynthesizeMe paper (the reference "
                                "repository's synthesizeme/prompts/llama3b.json, llama8b.json or llama70b.json)")
    output: FilePath = option(..., "compiled persona prompt JSON to write, for fit --persona-prompt")


FittedOptions = FitOptions | DemoOptions
"""The options of a step that fits users."""
JudgedOptions = EvaluateOptions | DemoOptions
"""The options of a step that judges users' pairs."""


def demo_cap(settings: Settings, max_demos: int | None = None) -> int | None:
    """The most demos in a fitted judge: `max_demos` when given, else the small-model profile's when the profile is on,
    else none (the paper)."""
    profile = settings.small_model_profile()
    return max_demos if max_demos is not None else profile.max_demos if profile else None


class BestOfNOptions(Options):
    renamed_options: ClassVar[dict[str, str]] = {"judge": "judge_file"}

    judge_file: FilePath = option(..., "a fitted user's judge: the JSON fit wrote (runs/fitted/<user>.json) or an "
                                  "MLflow model URI (models:/personal_judge-<user>-<model>@champion)")
    requests: FilePath = option(..., 'JSONL file, one request a line: {"conversation": "..." or [{"role": ..., '
                                '"content": ...}, ...], "candidates": ["...", ...]}')
    tournament: Tournament = option(
        "round_robin", "every pair of candidates judged in both orders, the most orders won winning (n(n-1) calls), "
        "or a knockout: each next candidate challenges the best so far, both orders (2(n-1) calls)")
    output: FilePath = option(Path("runs/best_of_n.jsonl"), "where each request's choice goes")
