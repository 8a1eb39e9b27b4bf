"""The `prefcraft` command line: parses flags into settings and calls a command. No logic of its own."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from prefcraft.console import configure_logging, echo, results_on_stdout
from prefcraft.data import DEMO_USERS, SAMPLE_USERS
from prefcraft.errors import PrefcraftError
from prefcraft.executors import EXECUTORS

ROLE_FLAGS = ("model", "api_base", "api_bases", "structured_output", "max_tokens", "temperature", "timeout_s")
DEMO_METHODS = ["default", "synthesizeme"]
DEMO_SEARCH_SIZE = 2  # n and m for the demo: the paper's 10 would take the main job past 15 minutes on 2 cores
SENSEJUDGE_STEPS = {
    "simulate": "responses to real SenseBench requests, labelled by a SIMULATED annotator persona",
    "select": "write preference descriptions from the dev pairs and select the subset whose vote is best",
    "evaluate": "accuracy, consistency, position bias and model ranking of a selected judge on the test pairs",
    "demo": "simulate, select and evaluate on the embedded model",
}
# Each has its command line in prefcraft/commands/<name>_cli.py: HELP, add_steps(parser, ...) and run(args, ...).
SUBCOMMANDS = ("prefdisco", "cupid", "lampqa", "tour", "experiment", "report", "sweep")
SENSEJUDGE_DEMO = {"dev_dialogues": 2, "test_dialogues": 2, "max_pair_descriptions": 4}  # about 150 LM calls


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Each flag's help ends with its default, unless it has none (None, a switch's False) or the help names it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        no_default = action.default in (None, argparse.SUPPRESS) or action.nargs == 0  # a switch says what it does
        if no_default or "default" in help_text or not action.option_strings:
            return help_text
        default = " ".join(map(str, action.default)) if isinstance(action.default, list) else "%(default)s"
        return f"{help_text} (default: {default})"


class CommandParser(argparse.ArgumentParser):
    """Every prefcraft parser: flags are matched whole (`--candidate` is no `--candidates`) and the help shows the
    defaults. Subparsers are of their parent's class, so each step's parser is one too."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)


@dataclass(frozen=True)
class Bounded:
    """A number flag's type with its bounds: argparse checks a flag with it, and experiment and sweep files check the
    same option with `annotation()`, so the bounds are written once."""

    kind: type[int] | type[float]
    ge: float | None = None
    le: float | None = None

    @property
    def __name__(self) -> str:  # argparse names the type in "invalid int value: 'x'"
        return self.kind.__name__

    def __call__(self, text: str) -> int | float:
        value = self.kind(text)
        if (self.ge is not None and value < self.ge) or (self.le is not None and value > self.le):
            raise argparse.ArgumentTypeError(f"{value} is not {self.describe()}")
        return value

    def describe(self) -> str:
        if self.le is None:
            return f"at least {self.ge}"
        return f"at most {self.le}" if self.ge is None else f"between {self.ge} and {self.le}"

    def annotation(self) -> Any:
        from pydantic import Field

        return Annotated[self.kind, Field(ge=self.ge, le=self.le)]


COUNT = Bounded(int, ge=0)
POSITIVE = Bounded(int, ge=1)
SHARE = Bounded(float, ge=0.0, le=1.0)


def make_parser() -> argparse.ArgumentParser:
    parser = CommandParser(prog="prefcraft", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging, third-party libraries' info and debug lines included")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="start a model server and keep it up")
    add_settings_flags(serve)

    fit = commands.add_parser("fit", help="fit SynthesizeMe personal judges, one compiled JSON per user")
    add_settings_flags(fit)
    _add_data_flags(fit)
    _add_fit_flags(fit)
    add_executor_flags(fit, "fit users one after another here, or each as a Ray task")

    compile_persona = commands.add_parser("compile-persona",
                                          help="optimize the persona prompt (MIPROv2 by default), once")
    add_settings_flags(compile_persona)
    compile_persona.add_argument("--data", help="PersonalRewardBench file or dataset name (default: sample users)")
    compile_persona.add_argument("--train-users", nargs="+", required=True, metavar="USER",
                                 help="users whose traces the persona prompt is optimized on")
    compile_persona.add_argument("--val-users", nargs="+", required=True, metavar="USER",
                                 help="users the candidate prompts are scored on (none of the training users)")
    compile_persona.add_argument("--output", type=Path, required=True, help="compiled JSON to write")
    add_optimizer_flags(compile_persona, candidates=20, trials=30, bootstrapped_demos=10, labeled_demos=6)
    _add_search_flags(compile_persona)

    evaluate = commands.add_parser("evaluate", help="judge a split's pairs in both orders and report accuracy")
    add_settings_flags(evaluate)
    _add_data_flags(evaluate)
    evaluate.add_argument("--methods", nargs="+", default=["default"],
                          help="default, demographics, memory, demos, persona, synthesizeme")
    evaluate.add_argument("--fitted-dir", type=Path, default=Path("runs/fitted"), help="fitted users' JSON files")
    evaluate.add_argument("--demographics", metavar="FILE_OR_DATASET",
                          help="user profiles for the demographics method: the PRISM survey, Hugging Face dataset "
                          "HannahRoseKirk/prism-alignment (config survey), or a local .jsonl/.json/.parquet copy")
    evaluate.add_argument("--allow-fitted-pairs", action="store_true",
                          help="score demos, persona, synthesizeme and memory on --split train or val, the pairs "
                          "they learned from (optimistic: for debugging, not for reporting)")
    add_executor_flags(evaluate, "judge users one after another here, or each user and method as a Ray task")

    demo = commands.add_parser("demo", help="the main job: fit sample users, compare with the default judge")
    add_settings_flags(demo)
    _add_data_flags(demo)
    _add_fit_flags(demo)
    demo.set_defaults(subsets=DEMO_SEARCH_SIZE, demo_candidates=DEMO_SEARCH_SIZE)

    sensejudge = commands.add_parser("sensejudge", help="SenseJudge: preference subsets and model ranking")
    steps = sensejudge.add_subparsers(dest="step", required=True)
    for step, step_help in SENSEJUDGE_STEPS.items():
        step_parser = steps.add_parser(step, help=step_help)
        add_settings_flags(step_parser)
        _add_sensejudge_flags(step_parser, step)
    for name in SUBCOMMANDS:
        subcommand = _subcommand_cli(name)
        subcommand.add_steps(commands.add_parser(name, help=subcommand.HELP), add_settings_flags)
    return parser


def add_executor_flags(parser: argparse.ArgumentParser, work: str, default: str | None = "local") -> None:
    """--executor and --address: where independent work items run (prefcraft/executors.py)."""
    parser.add_argument("--executor", choices=EXECUTORS, default=default,
                        help=f"{work} (ray: pip install 'prefcraft[distributed]')")
    parser.add_argument("--address", help="Ray cluster to join: 'auto', ray://HOST:10001 (default: a new local one)")


def _subcommand_cli(name: str) -> Any:
    """A subcommand's command line: `HELP`, `add_steps(parser, add_settings_flags)` and `run(args, settings, echo)`."""
    return importlib.import_module(f"prefcraft.commands.{name}_cli")


def add_optimizer_flags(
    parser: argparse.ArgumentParser, *, candidates: int, trials: int, bootstrapped_demos: int, labeled_demos: int,
    metric_calls: int = 400,
) -> None:
    """Which DSPy optimizer compiles the program, and its budget (defaults: the paper's, given by the command)."""
    from prefcraft.optimizers.prompt_optimizer import OPTIMIZERS

    group = parser.add_argument_group("optimizer")
    group.add_argument("--optimizer", choices=OPTIMIZERS, default="miprov2",
                       help="miprov2 (the papers'), gepa (reflective; the prompt model reflects) or bootstrap_rs "
                       "(random demo sets, the cheap baseline)")
    group.add_argument("--candidates", type=POSITIVE, default=candidates,
                       help=f"instruction candidates (miprov2) or demo sets (bootstrap_rs); paper: {candidates}")
    group.add_argument("--trials", type=POSITIVE, default=trials, help=f"miprov2 trials (paper: {trials})")
    group.add_argument("--max-bootstrapped-demos", type=COUNT, default=bootstrapped_demos,
                       help="demos bootstrapped from the program's own successful traces, per predictor")
    group.add_argument("--max-labeled-demos", type=COUNT, default=labeled_demos,
                       help="demos taken as they are from the training examples, per predictor")
    group.add_argument("--max-metric-calls", type=POSITIVE, default=metric_calls, help="gepa's budget")
    group.add_argument("--metric-threshold", type=float, default=0.5,
                       help="the score at which a bootstrapped trace counts as a demo")


def optimizer_config(args: argparse.Namespace, settings: Any) -> Any:
    """The optimizer flags as an OptimizerConfig; the seed and concurrency come from the settings."""
    from prefcraft.optimizers.prompt_optimizer import OptimizerConfig

    return OptimizerConfig(
        name=args.optimizer, num_candidates=args.candidates, num_trials=args.trials,
        max_bootstrapped_demos=args.max_bootstrapped_demos, max_labeled_demos=args.max_labeled_demos,
        max_metric_calls=args.max_metric_calls, metric_threshold=args.metric_threshold,
        num_threads=settings.num_threads, seed=settings.seed,
    )


def _add_sensejudge_flags(parser: argparse.ArgumentParser, step: str) -> None:
    parser.add_argument("--pairs", type=Path,
                        help="labelled pairs, PersonalRewardBench schema (simulate writes them; default: "
                        "runs/sensejudge/pairs.jsonl)")
    if step in ("simulate", "demo"):
        parser.add_argument("--dialogues", type=Path, required=True,
                            help="SenseBench's new_sense_bmk.json or its folder (not shipped: no licence upstream)")
        parser.add_argument("--dev-dialogues", type=POSITIVE, default=4, help="dialogues whose pairs are dev pairs")
        parser.add_argument("--test-dialogues", type=POSITIVE, default=2, help="dialogues whose pairs are test pairs")
        parser.add_argument("--variants", nargs="+", default=["plain", "concise", "detailed"],
                            help="response models: the task model under these system prompts")
        parser.add_argument("--persona", help="the simulated annotator's persona (default: wants short answers)")
        parser.add_argument("--max-context-chars", type=int, default=1200, help="dialogue turns kept per request")
        parser.add_argument("--max-response-chars", type=int, default=600, help="longest response")
        parser.add_argument("--response-temperature", type=float, default=0.7, help="sampling of the responses")
    if step in ("select", "evaluate", "demo"):
        parser.add_argument("--judge", type=Path,
                            help="the compiled SelectedJudge: select writes it, evaluate reads it (default: "
                            "runs/sensejudge/sensejudge.json)")
        parser.add_argument("--annotator", help="whose pairs, when the file holds several annotators")
    if step in ("select", "demo"):
        parser.add_argument("--max-pair-descriptions", type=COUNT, default=10,
                            help="dev pairs that get a description of their own (the reference: 10)")
        parser.add_argument("--exhaustive-limit", type=COUNT, default=12, help="beyond this many descriptions, beam")
        parser.add_argument("--beam-width", type=POSITIVE, default=64, help="subsets kept at each step of the beam")
        parser.add_argument("--penalize-order-imbalance", action="store_true",
                            help="score a subset minus the gap between its right answers in the two orders")
    if step in ("evaluate", "demo"):
        parser.add_argument("--reference-ranking", nargs="+", metavar="MODEL",
                            help="reference ranking of the response models, best first (default: the annotator's)")
        parser.add_argument("--output-dir", type=Path,
                            help="where judgments go (default: runs/sensejudge)")
    if step == "demo":
        parser.set_defaults(**SENSEJUDGE_DEMO)


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


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("settings (override the config file and PREFCRAFT_* environment variables)")
    group.add_argument("--config", type=Path, help="TOML settings file")
    group.add_argument("--resume", action="store_true", default=None,
                       help="continue this command's interrupted MLflow run (same params) instead of opening a new one")
    for role in ("task", "prompt", "judge"):
        group.add_argument(f"--{role}-model", help=f"litellm model string of the {role} model")
        group.add_argument(f"--{role}-api-base", help=f"OpenAI-compatible base URL of the {role} model")
        group.add_argument(f"--{role}-api-bases", nargs="+", metavar="URL",
                           help=f"several base URLs serving the {role} model; calls are spread over them")
        group.add_argument(f"--{role}-structured-output", choices=["json_schema", "llguidance", "none"],
                           help=f"json_schema: the {role} model's output is constrained to the signature's schema")
        group.add_argument(f"--{role}-max-tokens", type=int, help=f"longest answer of the {role} model")
        group.add_argument(f"--{role}-temperature", type=float, help=f"sampling temperature of the {role} model")
        group.add_argument(f"--{role}-timeout-s", type=float, help=f"seconds one call of the {role} model may take")
    group.add_argument("--no-serve", dest="serve", action="store_false", default=None,
                       help="never start a server; every model needs an api_base or a hosted provider")
    group.add_argument("--backend", choices=["llamacpp", "vllm"], help="server to start (default llamacpp)")
    group.add_argument("--server-model", help="GGUF file (llamacpp) or Hugging Face id (vllm)")
    group.add_argument("--served-model-name", help="name the server serves the model under")
    group.add_argument("--port", type=int, help="server port (default: a free one)")
    group.add_argument("--slots", type=int, help="llamacpp parallel slots (default 4)")
    group.add_argument("--tensor-parallel-size", type=int, help="vllm --tensor-parallel-size")
    group.add_argument("--max-model-len", type=int, help="vllm --max-model-len")
    group.add_argument("--threads", dest="num_threads", type=int, help="parallel LM calls")
    group.add_argument("--tracking-uri", help="MLflow tracking URI (default sqlite:///mlflow.db)")
    group.add_argument("--experiment", help="MLflow experiment name")
    group.add_argument("--cache-dir", type=Path, help="DSPy cache directory")


def _add_data_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", help="PersonalRewardBench file (.jsonl/.json/.parquet) or Hugging Face dataset name "
                        "(default: the bundled synthetic sample users)")
    parser.add_argument("--users", nargs="+", help="user ids to include (default: all)")
    parser.add_argument("--split", default="test", choices=["train", "val", "test"], help="which pairs to judge")
    parser.add_argument("--output-dir", type=Path, default=Path("runs/latest"), help="where result files go")


def settings_overrides(args: argparse.Namespace) -> dict[str, Any]:
    flags = vars(args)
    overrides: dict[str, Any] = {}
    for role in ("task", "prompt", "judge"):
        values = {name: flags.get(f"{role}_{name}") for name in ROLE_FLAGS}
        if any(value is not None for value in values.values()):
            overrides[role] = {name: value for name, value in values.items() if value is not None}
    server = {"backend": flags.get("backend"), "model": flags.get("server_model"), "port": flags.get("port"),
              "served_model_name": flags.get("served_model_name"), "slots": flags.get("slots"),
              "tensor_parallel_size": flags.get("tensor_parallel_size"), "max_model_len": flags.get("max_model_len")}
    if any(value is not None for value in server.values()):
        overrides["server"] = {name: value for name, value in server.items() if value is not None}
    for name in ("serve", "num_threads", "tracking_uri", "experiment", "cache_dir", "resume"):
        if flags.get(name) is not None:
            overrides[name] = flags[name]
    return overrides


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    import dspy

    configure_logging(args.verbose)
    from prefcraft.settings import load_settings

    try:
        settings = load_settings(args.config, settings_overrides(args))
        with results_on_stdout():
            run_command(args, settings)
    except PrefcraftError as error:
        print(f"prefcraft: error: {error}", file=sys.stderr)
        return 2
    except dspy.LMError as error:
        print(f"prefcraft: error: a model call failed ({type(error).__name__}): {error}\n"
              "  hint: check the server (its log is under .prefcraft/logs/ when prefcraft started it), or raise "
              "--task-timeout-s", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("prefcraft: interrupted", file=sys.stderr)
        return 130
    return 0


def search_config(args: argparse.Namespace, settings: Any) -> Any:
    from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig

    return SynthesizeMeConfig(num_persona_subsets=args.subsets, num_demo_candidates=args.demo_candidates,
                              max_demos=args.max_demos, search=args.search, num_threads=settings.num_threads,
                              seed=settings.seed)


def sensejudge_job(args: argparse.Namespace, settings: Any) -> Any:
    from prefcraft.commands.sensejudge import SenseJudgeJob
    from prefcraft.commands.sensejudge_simulate import DEFAULT_PERSONA, SimulationConfig
    from prefcraft.optimizers.subset_selection import SubsetSelectionConfig

    flags = vars(args)
    given = ("pairs", "judge", "output_dir", "dialogues", "annotator", "reference_ranking")
    job = SenseJudgeJob(**{name: flags[name] for name in given if flags.get(name) is not None})
    if "dialogues" in flags:
        job.simulation = SimulationConfig(
            dev_dialogues=args.dev_dialogues, test_dialogues=args.test_dialogues, variants=tuple(args.variants),
            persona=args.persona or DEFAULT_PERSONA, max_context_chars=args.max_context_chars,
            max_response_chars=args.max_response_chars, response_temperature=args.response_temperature,
            seed=settings.seed,
        )
    if "max_pair_descriptions" in flags:
        job.max_pair_descriptions = args.max_pair_descriptions
        job.selection = SubsetSelectionConfig(
            exhaustive_limit=args.exhaustive_limit, beam_width=args.beam_width,
            penalize_order_imbalance=args.penalize_order_imbalance, num_threads=settings.num_threads,
        )
    return job


def run_command(args: argparse.Namespace, settings: Any, emit: Callable[[str], None] = echo) -> Any:
    """Runs the parsed command, its results written with `emit`; returns its outcome (what its report was made from),
    for a tour or an experiment."""
    if args.command == "serve":
        from prefcraft.commands.serve import serve

        serve(settings, emit)
        return None
    if args.command in SUBCOMMANDS:
        return _subcommand_cli(args.command).run(args, settings, emit)
    if args.command == "sensejudge":
        from prefcraft.commands.sensejudge import run_sensejudge

        steps = ["simulate", "select", "evaluate"] if args.step == "demo" else [args.step]
        return run_sensejudge(settings, sensejudge_job(args, settings), steps, emit)
    from prefcraft.commands.evaluate import evaluate_methods
    from prefcraft.report import format_comparison, format_fit_summary, format_report

    data = args.data or SAMPLE_USERS
    if args.command == "compile-persona":
        from prefcraft.commands.compile_persona import compile_persona

        path = compile_persona(settings, data, args.output, train_users=args.train_users, val_users=args.val_users,
                               fit_config=search_config(args, settings), prompt_config=optimizer_config(args, settings))
        emit(f"compiled persona prompt written to {path}")
        return path
    users = args.users
    if args.command == "demo" and not args.data and not users:
        users = DEMO_USERS
    fitted: dict[str, Path] = {}
    profiles: dict[str, str] | None = None
    methods = DEMO_METHODS if args.command == "demo" else getattr(args, "methods", [])
    if args.command in ("fit", "demo"):
        from prefcraft.commands.fit import default_persona_prompt, fit_users

        summary = fit_users(settings, data, args.fitted_dir, users=users, config=search_config(args, settings),
                            persona_prompt=args.persona_prompt or default_persona_prompt(settings.task.model),
                            executor=getattr(args, "executor", "local"), address=getattr(args, "address", None))
        emit(format_fit_summary(summary))
        if not methods:
            return summary
        fitted = summary.judges
    elif args.command == "evaluate":
        fitted = {path.stem: path for path in sorted(args.fitted_dir.glob("*.json"))}
        if args.demographics:
            from prefcraft.loaders.user_profiles import load_profiles

            profiles = load_profiles(args.demographics)
    if methods:
        outcomes = evaluate_methods(settings, data, methods=methods, users=users, split=args.split,
                                    fitted=fitted, profiles=profiles, output_dir=args.output_dir,
                                    allow_fitted_pairs=getattr(args, "allow_fitted_pairs", False),
                                    executor=getattr(args, "executor", "local"), address=getattr(args, "address", None))
        for method, outcome in outcomes.items():
            emit(format_report(method, outcome.report, outcome.usage))
        if len(outcomes) > 1:
            emit(format_comparison({method: outcome.report for method, outcome in outcomes.items()}))
        return outcomes
    return None


if __name__ == "__main__":
    sys.exit(main())
