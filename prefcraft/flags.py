"""The flags every prefcraft command shares: the parser class, bounded number types, the settings, optimizer and
executor groups, and the settings overrides they make. Components add their own step flags beside these."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from prefcraft.components.component import Component, Step
from prefcraft.executors import EXECUTORS
from prefcraft.optimizers.prompt_optimizer import (
    CONFIGS,
    BootstrapRSConfig,
    GEPAConfig,
    MIPROv2Config,
    OptimizerConfig,
)

ROLE_FLAGS = ("model", "api_base", "api_bases", "structured_output", "max_tokens", "temperature", "timeout_s")


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
        return Annotated[self.kind, Field(ge=self.ge, le=self.le)]


COUNT = Bounded(int, ge=0)
POSITIVE = Bounded(int, ge=1)
SHARE = Bounded(float, ge=0.0, le=1.0)


def add_executor_flags(parser: argparse.ArgumentParser, work: str, default: str | None = "local") -> None:
    """--executor and --address: where independent work items run (prefcraft/executors.py)."""
    parser.add_argument("--executor", choices=EXECUTORS, default=default,
                        help=f"{work} (ray: pip install 'prefcraft[distributed]')")
    parser.add_argument("--address", help="Ray cluster to join: 'auto', ray://HOST:10001 (default: a new local one)")


def add_optimizer_flags(
    parser: argparse.ArgumentParser, *, candidates: int, trials: int, bootstrapped_demos: int, labeled_demos: int,
    metric_calls: int = 400,
) -> None:
    """Which DSPy optimizer compiles the program, and its budget (defaults: the paper's, given by the command)."""
    group = parser.add_argument_group("optimizer")
    group.add_argument("--optimizer", choices=tuple(CONFIGS), default=MIPROv2Config.name,
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


def optimizer_config(args: argparse.Namespace, settings: Any) -> OptimizerConfig:
    """The config of the optimizer --optimizer names, from its own flags; the seed and concurrency come from the
    settings."""
    if args.optimizer == GEPAConfig.name:
        return GEPAConfig(max_metric_calls=args.max_metric_calls, num_threads=settings.num_threads, seed=settings.seed)
    if args.optimizer == BootstrapRSConfig.name:
        return BootstrapRSConfig(
            num_candidates=args.candidates, max_bootstrapped_demos=args.max_bootstrapped_demos,
            max_labeled_demos=args.max_labeled_demos, metric_threshold=args.metric_threshold,
            num_threads=settings.num_threads,
        )  # fmt: skip
    return MIPROv2Config(
        num_candidates=args.candidates, num_trials=args.trials, max_bootstrapped_demos=args.max_bootstrapped_demos,
        max_labeled_demos=args.max_labeled_demos, metric_threshold=args.metric_threshold,
        num_threads=settings.num_threads, seed=settings.seed,
    )  # fmt: skip


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


def add_step_flags(parser: argparse.ArgumentParser, step: Step) -> None:
    """A step's command line: its own flags first, then the settings group (models, server, tracking)."""
    step.add_flags(parser)
    add_settings_flags(parser)


def step_parser(component: Component, step: str) -> CommandParser:
    """The parser of `prefcraft <component> <step>` on its own, for a command run from a file or by the tour."""
    parser = CommandParser(prog=f"prefcraft {component.name} {step}", description=component.steps[step].help)
    add_step_flags(parser, component.steps[step])
    parser.set_defaults(command=component.name, step=step)
    return parser
