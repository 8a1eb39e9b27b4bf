"""`prefcraft synthesizeme`: fit one personal judge per user (persona from verified reasoning, searched demos),
optimize the persona prompt once, and judge a split's pairs in both orders against the baselines."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefcraft.components.component import Comparison, Component, Demo, Emit, Step
from prefcraft.components.synthesizeme.charts import CHARTS
from prefcraft.components.synthesizeme.compile_persona import compile_persona
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE, evaluate_methods
from prefcraft.components.synthesizeme.fit import PERSONA_SYNTHESIZER, default_persona_prompt, demo_cap, fit_users
from prefcraft.components.synthesizeme.profiles import load_profiles
from prefcraft.components.synthesizeme.released_prompt import import_released_persona_prompt
from prefcraft.components.synthesizeme.report import format_comparison, format_fit_summary, format_report
from prefcraft.components.synthesizeme.samples import DEMO_USERS, SAMPLE_USERS
from prefcraft.flags import ExecutorOptions, optimizer_config, optimizer_options
from prefcraft.optimizers.compile_selection import CompileVerdict
from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig
from prefcraft.options import FilePath, OneOrMore, Options, Positive, option
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.report import format_verdict

HELP = ("SynthesizeMe: personal judges from verified reasoning (fit, evaluate, compile-persona, import-persona-prompt, "
        "demo)")
DEMO_METHODS = ["default", "synthesizeme"]
DEMO_SEARCH_SIZE = 2  # n and m for the demo: the paper's 10 would take the main job past 15 minutes on 2 cores
# The tour fits two held-out users (the demo fits three): the whole tour stays under 15 minutes.
TOUR_USERS = ["sample_user_07", "sample_user_08"]


class _Data(Options):
    data: str | None = option(None, "PersonalRewardBench file (.jsonl/.json/.parquet) or Hugging Face dataset name "
                              "(default: the bundled synthetic sample users)")
    users: OneOrMore[str] | None = option(None, "user ids to include (default: all)")


class _Judged(_Data):
    split: Literal["train", "val", "test"] = option("test", "which pairs to judge")
    output_dir: FilePath = option(Path("runs/latest"), "where result files go")


class _Search(Options):
    subsets: Positive = option(10, "n: random candidate trace subsets for the persona (besides the unshuffled and "
                               "labeled-only ones)")
    demo_candidates: Positive = option(10, "m: random candidate demo sets (besides no demos, the unshuffled and the "
                                       "labeled-only ones)")
    max_demos: Positive | None = option(
        None, "most demos in a fitted user's judge, reasoned and labeled together (default: every verified train "
        "pair may be one, as in the paper; with the small-model profile on, its max_demos)")
    search: Literal["exact", "exhaustive", "halving"] = option(
        "exact", "how candidates are scored: the first to reach 0.8 on the validation judgments wins, else the most "
        "accurate (the paper), found with the calls that cannot change the choice left out (exact) or with every "
        "candidate scored on every judgment (exhaustive: the same winner, every score in the record); or successive "
        "halving (fewer calls still; the winner can differ)")
    verification: Literal["one_order", "both_orders"] = option(
        "one_order", "step 1 keeps a train pair judged right in the one order it is shown in (the paper), or only "
        "one judged right in both orders, with demo sets balanced by order (a guard against position bias; one more "
        "call per train pair)")
    step3_traces: Literal["bootstrap_with_persona", "from_step1"] = option(
        "bootstrap_with_persona", "step 3's demos: bootstrap the train pairs again with the persona (the paper), or "
        "reuse step 1's traces, written without it (one bootstrap pass fewer)")

    def search_config(self, settings: Any) -> SynthesizeMeConfig:
        return SynthesizeMeConfig(num_persona_subsets=self.subsets, num_demo_candidates=self.demo_candidates,
                                  max_demos=demo_cap(settings, self.max_demos), search=self.search,
                                  verification=self.verification, step3_traces=self.step3_traces,
                                  num_threads=settings.num_threads, seed=settings.seed)


class _Fit(_Search):
    persona_prompt: FilePath | None = option(
        None, "compiled persona prompt JSON (default: the one compiled/index.json registers for the task model, if "
        "any, else the uncompiled prompt)")
    fitted_dir: FilePath = option(Path("runs/fitted"), "where fitted users go")


class FitOptions(ExecutorOptions, _Fit, _Data):
    pass


class CompilePersonaOptions(optimizer_options(candidates=20, trials=30, bootstrapped_demos=10, labeled_demos=6,
                                              budget_from="SynthesizeMe, App. F"), _Search):
    data: str | None = option(None, "PersonalRewardBench file or dataset name (default: sample users)")
    train_users: OneOrMore[str] = option(..., "users whose traces the persona prompt is optimized on",
                                         metavar="USER")
    val_users: OneOrMore[str] = option(..., "users the candidate prompts are scored on (none of the training users)",
                                       metavar="USER")
    output: FilePath = option(..., "compiled JSON to write")


class EvaluateOptions(ExecutorOptions, _Judged):
    methods: OneOrMore[str] = option(["default"], "default, demographics, memory, demos, persona, synthesizeme")
    fitted_dir: FilePath = option(Path("runs/fitted"), "fitted users' JSON files")
    demographics: str | None = option(
        None, "user profiles for the demographics method: the PRISM survey, Hugging Face dataset "
        "HannahRoseKirk/prism-alignment (config survey), or a local .jsonl/.json/.parquet copy",
        metavar="FILE_OR_DATASET")
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
    # Halving, in a tour that has to stay under 15 minutes: its rungs take at most 18 and 20 calls for the 4 and 5
    # candidates of 8 judgments a demo fit searches. The paper's rule, even decided exactly, needs the first one's 8
    # and, when every candidate scores 4 of 8 (as nearly all of a 135M judge's do), at least 4 of each later one's:
    # 20 and 24 at least.
    search: Literal["exact", "exhaustive", "halving"] = option(
        "halving", "how candidates are scored: successive halving (the demo's default: fewer calls; the winner can "
        "differ), or the paper's rule, the first to reach 0.8 winning, decided with the calls that cannot change the "
        "choice left out (exact) or with every candidate on every validation judgment (exhaustive)")


class ImportPersonaPromptOptions(Options):
    released: FilePath = option(..., "a persona program released with the SynthesizeMe paper (the reference "
                                "repository's synthesizeme/prompts/llama3b.json, llama8b.json or llama70b.json)")
    output: FilePath = option(..., "compiled persona prompt JSON to write, for fit --persona-prompt")


def run_import_persona_prompt(options: ImportPersonaPromptOptions, settings: Any, emit: Emit) -> Path:
    path = import_released_persona_prompt(options.released, options.output)
    emit(f"released persona prompt imported to {path}; fit from it with --persona-prompt {path}")
    return path


def run_compile_persona(options: CompilePersonaOptions, settings: Any, emit: Emit) -> CompileVerdict:
    verdict = compile_persona(settings, options.data or SAMPLE_USERS, options.output, train_users=options.train_users,
                              val_users=options.val_users, fit_config=options.search_config(settings),
                              prompt_config=optimizer_config(options, settings))
    emit("compile-persona:\n" + format_verdict(verdict, "persona judge accuracy"))
    return verdict


def run_fit(options: FitOptions | DemoOptions, settings: Any, emit: Emit, users: list[str] | None = None) -> Any:
    summary = fit_users(settings, options.data or SAMPLE_USERS, options.fitted_dir, users=users or options.users,
                        config=options.search_config(settings),
                        persona_prompt=options.persona_prompt or default_persona_prompt(settings.task.model),
                        executor=getattr(options, "executor", "local"), address=getattr(options, "address", None))
    emit(format_fit_summary(summary))
    return summary


def run_evaluate(options: EvaluateOptions, settings: Any, emit: Emit) -> dict[str, Any]:
    fitted = {path.stem: path for path in sorted(options.fitted_dir.glob("*.json"))}
    profiles = load_profiles(options.demographics) if options.demographics else None
    return _evaluate(options, settings, emit, options.methods, options.users, fitted, profiles)


def run_demo(options: DemoOptions, settings: Any, emit: Emit) -> dict[str, Any]:
    users = options.users or (None if options.data else DEMO_USERS)
    summary = run_fit(options, settings, emit, users)
    return _evaluate(options, settings, emit, DEMO_METHODS, users, summary.judges, None)


def _evaluate(options: EvaluateOptions | DemoOptions, settings: Any, emit: Emit, methods: list[str],
              users: list[str] | None, fitted: dict[str, Path], profiles: dict[str, str] | None) -> dict[str, Any]:
    outcomes = evaluate_methods(settings, options.data or SAMPLE_USERS, methods=methods, users=users,
                                split=options.split, fitted=fitted, profiles=profiles, output_dir=options.output_dir,
                                allow_fitted_pairs=getattr(options, "allow_fitted_pairs", False),
                                executor=getattr(options, "executor", "local"),
                                address=getattr(options, "address", None))
    for method, outcome in outcomes.items():
        emit(format_report(method, outcome.report, outcome.usage))
    if len(outcomes) > 1:
        emit(format_comparison({method: outcome.report for method, outcome in outcomes.items()}))
    return outcomes


def compare(outcomes: dict[str, Any]) -> Comparison:
    return Comparison("accuracy, both orders", "default judge", outcomes["default"].report.accuracy.mean,
                      "SynthesizeMe", outcomes["synthesizeme"].report.accuracy.mean, "%")


COMPONENT = Component(
    name="synthesizeme", title="SynthesizeMe", help=HELP,
    steps={
        "fit": Step("fit SynthesizeMe personal judges, one compiled JSON per user", FitOptions, run_fit),
        "evaluate": Step("judge a split's pairs in both orders and report accuracy", EvaluateOptions, run_evaluate),
        "compile-persona": Step("optimize the persona prompt (MIPROv2 by default), once", CompilePersonaOptions,
                                run_compile_persona),
        "import-persona-prompt": Step("import a persona prompt released with the paper, for fit --persona-prompt",
                                      ImportPersonaPromptOptions, run_import_persona_prompt),
        "demo": Step("fit sample users, compare with the default judge", DemoOptions, run_demo),
    },
    run_names=("fit-synthesizeme", "evaluate", "compile-persona"),
    demo=Demo(lambda _: ["demo", "--users", *TOUR_USERS], compare),
    charts=CHARTS,
    programs={PERSONAL_JUDGE: lambda _: PreferenceJudge(), PERSONA_SYNTHESIZER: lambda _: PersonaSynthesizer()},
)
