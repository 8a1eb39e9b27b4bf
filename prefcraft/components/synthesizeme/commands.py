"""`prefcraft synthesizeme`: fit one personal judge per user (persona from verified reasoning, searched demos),
optimize the persona prompt once, and judge a split's pairs in both orders against the baselines."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Emit, Step
from prefcraft.components.synthesizeme.charts import CHARTS
from prefcraft.components.synthesizeme.compile_persona import compile_persona
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE, evaluate_methods
from prefcraft.components.synthesizeme.fit import PERSONA_SYNTHESIZER, default_persona_prompt, fit_users
from prefcraft.components.synthesizeme.profiles import load_profiles
from prefcraft.components.synthesizeme.report import format_comparison, format_fit_summary, format_report
from prefcraft.components.synthesizeme.samples import DEMO_USERS, SAMPLE_USERS
from prefcraft.flags import COUNT, POSITIVE, add_executor_flags, add_optimizer_flags, optimizer_config
from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer

HELP = "SynthesizeMe: personal judges from verified reasoning (fit, evaluate, compile-persona, demo)"
DEMO_METHODS = ["default", "synthesizeme"]
DEMO_SEARCH_SIZE = 2  # n and m for the demo: the paper's 10 would take the main job past 15 minutes on 2 cores
# The tour fits two held-out users (the demo fits three): the whole tour stays under 15 minutes.
TOUR_USERS = ["sample_user_07", "sample_user_08"]


def _add_fit_step_flags(parser: argparse.ArgumentParser) -> None:
    _add_data_flags(parser)
    _add_fit_flags(parser)
    add_executor_flags(parser, "fit users one after another here, or each as a Ray task")


def _add_compile_persona_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", help="PersonalRewardBench file or dataset name (default: sample users)")
    parser.add_argument("--train-users", nargs="+", required=True, metavar="USER",
                        help="users whose traces the persona prompt is optimized on")
    parser.add_argument("--val-users", nargs="+", required=True, metavar="USER",
                        help="users the candidate prompts are scored on (none of the training users)")
    parser.add_argument("--output", type=Path, required=True, help="compiled JSON to write")
    add_optimizer_flags(parser, candidates=20, trials=30, bootstrapped_demos=10, labeled_demos=6)
    _add_search_flags(parser)


def _add_evaluate_flags(parser: argparse.ArgumentParser) -> None:
    _add_data_flags(parser)
    parser.add_argument("--methods", nargs="+", default=["default"],
                        help="default, demographics, memory, demos, persona, synthesizeme")
    parser.add_argument("--fitted-dir", type=Path, default=Path("runs/fitted"), help="fitted users' JSON files")
    parser.add_argument("--demographics", metavar="FILE_OR_DATASET",
                        help="user profiles for the demographics method: the PRISM survey, Hugging Face dataset "
                        "HannahRoseKirk/prism-alignment (config survey), or a local .jsonl/.json/.parquet copy")
    parser.add_argument("--allow-fitted-pairs", action="store_true",
                        help="score demos, persona, synthesizeme and memory on --split train or val, the pairs "
                        "they learned from (optimistic: for debugging, not for reporting)")
    add_executor_flags(parser, "judge users one after another here, or each user and method as a Ray task")


def _add_demo_flags(parser: argparse.ArgumentParser) -> None:
    _add_data_flags(parser)
    _add_fit_flags(parser)
    parser.set_defaults(subsets=DEMO_SEARCH_SIZE, demo_candidates=DEMO_SEARCH_SIZE)


def _add_fit_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--persona-prompt", type=Path,
                        help="compiled persona prompt JSON (default: the one shipped for the task model)")
    parser.add_argument("--fitted-dir", type=Path, default=Path("runs/fitted"), help="where fitted users go")
    _add_search_flags(parser)


def _add_search_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--subsets", type=POSITIVE, default=10, help="n: candidate trace subsets for the persona")
    parser.add_argument("--demo-candidates", type=POSITIVE, default=10, help="m: candidate demo sets")
    parser.add_argument("--max-demos", type=COUNT, default=4, help="most demos in a fitted user's judge")
    parser.add_argument("--search", choices=["halving", "exhaustive"], default="halving",
                        help="how candidates are scored: successive halving (fewer calls) or all on every pair")


def _add_data_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", help="PersonalRewardBench file (.jsonl/.json/.parquet) or Hugging Face dataset name "
                        "(default: the bundled synthetic sample users)")
    parser.add_argument("--users", nargs="+", help="user ids to include (default: all)")
    parser.add_argument("--split", default="test", choices=["train", "val", "test"], help="which pairs to judge")
    parser.add_argument("--output-dir", type=Path, default=Path("runs/latest"), help="where result files go")


def search_config(args: argparse.Namespace, settings: Any) -> Any:
    return SynthesizeMeConfig(num_persona_subsets=args.subsets, num_demo_candidates=args.demo_candidates,
                              max_demos=args.max_demos, search=args.search, num_threads=settings.num_threads,
                              seed=settings.seed)


def run_compile_persona(args: argparse.Namespace, settings: Any, emit: Emit) -> Path:
    path = compile_persona(settings, args.data or SAMPLE_USERS, args.output, train_users=args.train_users,
                           val_users=args.val_users, fit_config=search_config(args, settings),
                           prompt_config=optimizer_config(args, settings))
    emit(f"compiled persona prompt written to {path}")
    return path


def run_fit(args: argparse.Namespace, settings: Any, emit: Emit) -> Any:
    summary = fit_users(settings, args.data or SAMPLE_USERS, args.fitted_dir, users=args.users,
                        config=search_config(args, settings),
                        persona_prompt=args.persona_prompt or default_persona_prompt(settings.task.model),
                        executor=getattr(args, "executor", "local"), address=getattr(args, "address", None))
    emit(format_fit_summary(summary))
    return summary


def run_evaluate(args: argparse.Namespace, settings: Any, emit: Emit) -> dict[str, Any]:
    fitted = {path.stem: path for path in sorted(args.fitted_dir.glob("*.json"))}
    profiles = load_profiles(args.demographics) if args.demographics else None
    return _evaluate(args, settings, emit, args.methods, args.users, fitted, profiles)


def run_demo(args: argparse.Namespace, settings: Any, emit: Emit) -> dict[str, Any]:
    if not args.data and not args.users:
        args.users = DEMO_USERS
    summary = run_fit(args, settings, emit)
    return _evaluate(args, settings, emit, DEMO_METHODS, args.users, summary.judges, None)


def _evaluate(args: argparse.Namespace, settings: Any, emit: Emit, methods: list[str], users: list[str] | None,
              fitted: dict[str, Path], profiles: dict[str, str] | None) -> dict[str, Any]:
    outcomes = evaluate_methods(settings, args.data or SAMPLE_USERS, methods=methods, users=users, split=args.split,
                                fitted=fitted, profiles=profiles, output_dir=args.output_dir,
                                allow_fitted_pairs=getattr(args, "allow_fitted_pairs", False),
                                executor=getattr(args, "executor", "local"), address=getattr(args, "address", None))
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
        "fit": Step("fit SynthesizeMe personal judges, one compiled JSON per user", _add_fit_step_flags, run_fit),
        "evaluate": Step("judge a split's pairs in both orders and report accuracy", _add_evaluate_flags,
                         run_evaluate),
        "compile-persona": Step("optimize the persona prompt (MIPROv2 by default), once", _add_compile_persona_flags,
                                run_compile_persona),
        "demo": Step("fit sample users, compare with the default judge", _add_demo_flags, run_demo),
    },
    run_names=("fit-synthesizeme", "evaluate", "compile-persona"),
    demo=Demo(lambda _: ["demo", "--users", *TOUR_USERS], compare),
    charts=CHARTS,
    programs={PERSONAL_JUDGE: lambda _: PreferenceJudge(), PERSONA_SYNTHESIZER: lambda _: PersonaSynthesizer()},
)
