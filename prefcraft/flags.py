"""The flags every prefcraft command shares: the parser class, the settings group and the overrides it makes, and the
executor flags of the commands that pass them on. A step's own flags come from its options (prefcraft/options.py; the
optimizer group from prefcraft/optimizers/options.py)."""

from __future__ import annotations

import argparse
import shlex
from functools import cache
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel

from prefcraft.components.component import Component, Step
from prefcraft.executors import ExecutorOptions
from prefcraft.options import (
    Options,
    Renamed,
    add_option_flags,
    add_renamed_flag,
    as_flag,
    options_from_args,
)
from prefcraft.settings import ENV_PREFIX, ModelSettings, ServerSettings, Settings, StructuredOutput

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


def add_executor_flags(parser: argparse.ArgumentParser) -> None:
    """--executor and --address for a command that passes them on to its steps; without, each step's own."""
    add_option_flags(parser, ExecutorOptions)
    parser.set_defaults(executor=None)
    executor = next(action for action in parser._actions if action.dest == "executor")
    executor.help = f"{executor.help} (default: each step's own: the file's option, else local)"


def add_verbose_flag(parser: argparse.ArgumentParser) -> None:
    """-v/--verbose on `parser` and on every command and step under it, so that it is taken anywhere on the line.
    Below the top, unset unless given (SUPPRESS), so that a `-v` before the command stands."""
    for depth, command in _commands(parser):
        command.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS if depth else False,
                             help="debug logging, third-party libraries' info and debug lines included")


def _commands(parser: argparse.ArgumentParser, depth: int = 0) -> list[tuple[int, argparse.ArgumentParser]]:
    below = [command for action in parser._actions if isinstance(action, argparse._SubParsersAction)
             for command in action.choices.values()]
    return [(depth, parser)] + [found for command in below for found in _commands(command, depth + 1)]


SETTINGS_GROUP = "shared settings"
SETTINGS_POINTER = ("every flag `prefcraft settings --help` lists works here: --config, the models (--task-model, "
                    "--judge-model, ...), the server, --threads, --seed, tracking and cache")
ROLES = ("task", "prompt", "judge")
SERVER_KEYS = {"backend": "backend", "server_model": "model", "server_executable": "executable",
               "server_extra_args": "extra_args", "served_model_name": "served_model_name", "port": "port",
               "slots": "slots", "tensor_parallel_size": "tensor_parallel_size", "max_model_len": "max_model_len"}
SETTING_KEYS = ({f"{role}_{name}": f"{role}.{name}" for role in ROLES for name in ROLE_FLAGS}
                | {dest: f"server.{key}" for dest, key in SERVER_KEYS.items()}
                | {name: name for name in ("serve", "num_threads", "seed", "resume", "trace", "tracking_uri",
                                           "experiment", "cache_dir")})
"""Each settings flag's dest and the settings key (TOML, dotted) it sets."""


def environment_variable(key: str) -> str:
    """The variable that sets a settings key: `task.model` is PREFCRAFT_TASK__MODEL."""
    return ENV_PREFIX + key.upper().replace(".", "__")


def add_settings_flags(parser: argparse.ArgumentParser, listed: bool = False) -> None:
    """The settings flags of a command that runs programs: models, server, threads, tracking, cache. Each is taken,
    but only `listed` (`prefcraft settings --help`) shows them, each with its TOML key and variable; elsewhere one line
    points there, so that a step's help is its own flags."""
    group = parser.add_argument_group(SETTINGS_GROUP, None if listed else SETTINGS_POINTER)
    group.add_argument("--config", type=Path, metavar="PATH",
                       help="TOML settings file, over the defaults and under the PREFCRAFT_* variables (default: none)")
    _add_model_flags(group)
    group.add_argument("--no-serve", dest="serve", action="store_false", default=None,
                       help="never start a server: every hosted_vllm/ model needs an api_base (a hosted API's model, "
                       "openai/... and the like, never needs one)")
    _add_server_flags(group)
    group.add_argument("--threads", dest="num_threads", type=int, metavar="N",
                       help=f"parallel LM calls (default: {_default(Settings, 'num_threads')})")
    group.add_argument("--seed", type=int, metavar="N", help=f"seed of every random choice: samples, demo sets, "
                       f"optimizers (default: {_default(Settings, 'seed')})")
    group.add_argument("--resume", action="store_true", default=None,
                       help="continue this command's interrupted MLflow run (same params) instead of opening a new one")
    group.add_argument("--trace", action="store_true", default=None,
                       help="log every LM call as a span of an MLflow trace (default: off; params, metrics and result "
                       "files are logged either way)")
    group.add_argument("--tracking-uri", metavar="URI",
                       help=f"MLflow tracking URI (default: {_default(Settings, 'tracking_uri')})")
    group.add_argument("--mlflow-experiment", dest="experiment", metavar="NAME",
                       help=f"MLflow experiment the runs go to (default: {_default(Settings, 'experiment')})")
    add_renamed_flag(group, "--experiment", "--mlflow-experiment")
    group.add_argument("--cache-dir", type=Path, metavar="PATH",
                       help=f"DSPy cache directory (default: {_default(Settings, 'cache_dir')})")
    for action in group._group_actions:
        if not listed:
            action.help = argparse.SUPPRESS
        elif action.dest in SETTING_KEYS:
            key = SETTING_KEYS[action.dest]
            action.help = f"{action.help}; TOML {key}, variable {environment_variable(key)}"


def add_server_settings_flags(parser: argparse.ArgumentParser) -> None:
    """The settings flags of `prefcraft serve`: the config file and the server it starts."""
    group = parser.add_argument_group("server settings")
    group.add_argument("--config", type=Path, metavar="PATH", help="TOML settings file (default: none)")
    _add_server_flags(group)


MODEL_FLAG_SPECS: dict[str, dict[str, Any]] = {
    "model": {"metavar": "LITELLM_MODEL"},
    "api_base": {"metavar": "URL"},
    "api_bases": {"nargs": "+", "metavar": "URL"},
    "structured_output": {"choices": get_args(StructuredOutput)},
    "max_tokens": {"type": int, "metavar": "N"},
    "temperature": {"type": float, "metavar": "T"},
    "timeout_s": {"type": float, "metavar": "SECONDS"},
}
"""Each of ROLE_FLAGS' argparse settings, the same for every role."""


def _add_model_flags(group: argparse._ArgumentGroup) -> None:
    """The task model's flags, then the prompt and judge models' (each defaulting to the task model's)."""
    defaults = {name: _default(ModelSettings, name) for name in ("model", "max_tokens", "temperature", "timeout_s")}
    helps = {
        "model": f"the model the programs run on: a litellm model string (default: {defaults['model']})",
        "api_base": "OpenAI-compatible base URL of the task model (default: a server prefcraft starts)",
        "api_bases": "several base URLs serving the task model; calls are spread over them (default: none)",
        "structured_output": "how the task model's output is constrained to the signature's schema (default: auto, "
                             "compact JSON on a server prefcraft starts, else json_schema)",
        "max_tokens": f"longest answer of the task model (default: {defaults['max_tokens']})",
        "temperature": f"sampling temperature of the task model (default: {defaults['temperature']})",
        "timeout_s": f"seconds one call of the task model may take (default: {defaults['timeout_s']})",
    }
    purposes = {"prompt": "the model optimizers propose prompts with", "judge": "the model metrics grade with"}
    for role in ROLES:
        for name in ROLE_FLAGS:
            if role == "task":
                text = helps[name]
            elif name == "model":
                text = f"{purposes[role]}: a litellm model string (default: the task model)"
            else:
                text = f"{as_flag(f'task_{name}')} for the {role} model (default: the task model's)"
            group.add_argument(as_flag(f"{role}_{name}"), help=text, **MODEL_FLAG_SPECS[name])


def _add_server_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--backend", choices=["llamacpp", "vllm"],
                       help=f"server to start (default: {_default(ServerSettings, 'backend')})")
    group.add_argument("--server-model", metavar="MODEL", help="GGUF file (llamacpp) or Hugging Face id or folder "
                       "(vllm) (default: the bundled SmolLM2)")
    group.add_argument("--server-executable", metavar="PATH", help="the vllm executable (default: vllm on PATH; "
                       "`make vllm` installs one as .venv-vllm/bin/vllm)")
    group.add_argument("--server-extra-args", type=shlex.split, metavar="'ARGS'",
                       help="more flags for the server, as one quoted string: --server-extra-args='--swap-space 4' "
                       "(default: none)")
    group.add_argument("--served-model-name", metavar="NAME", help="name the server serves the model under "
                       "(default: the bundled model's name, or --server-model's own)")
    group.add_argument("--port", type=int, metavar="N", help="server port (default: a free one)")
    group.add_argument("--slots", type=int, metavar="N",
                       help=f"llamacpp parallel slots (default: {_default(ServerSettings, 'slots')})")
    group.add_argument("--tensor-parallel-size", type=int, metavar="N", help="vllm --tensor-parallel-size "
                       f"(default: {_default(ServerSettings, 'tensor_parallel_size')})")
    group.add_argument("--max-model-len", type=int, metavar="TOKENS",
                       help="vllm --max-model-len (default: the model's)")


def _default(model: type[BaseModel], name: str) -> Any:
    return model.model_fields[name].default


def settings_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the flags given set, as nested tables (`{"task": {"model": ...}}`)."""
    overrides: dict[str, Any] = {}
    for dest, key in SETTING_KEYS.items():
        if (value := getattr(args, dest, None)) is not None:
            table, _, name = key.rpartition(".")
            (overrides.setdefault(table, {}) if table else overrides)[name] = value
    return overrides


def add_step_flags(parser: argparse.ArgumentParser, step: Step) -> None:
    """A step's command line: its own flags first (the required ones leading), then the shared settings (models,
    server, tracking), taken but shown as one line. The usage line names the required flags and the two groups."""
    add_option_flags(parser, step.options)
    add_settings_flags(parser)
    parser.set_defaults(**step.settings_defaults)
    required = [f"{action.option_strings[0]} {action.metavar or action.dest.upper()}"
                f"{' ...' if action.nargs in ('+', '*') else ''}" for action in parser._actions if action.required]
    parser.usage = " ".join(["%(prog)s", *required, "[flags of this step]", "[shared settings]"])


@cache
def settings_flag_names() -> frozenset[str]:
    """Every settings flag's dest: a name an experiment sets in its [settings] tables, not as a step's option."""
    probe = CommandParser(add_help=False)
    add_settings_flags(probe)
    return frozenset(action.dest for action in probe._actions if not isinstance(action, Renamed))


def step_parser(component: Component, step: str) -> CommandParser:
    """The parser of `prefcraft <component> <step>` on its own, for a command run from a file or by the tour."""
    parser = CommandParser(prog=f"prefcraft {component.name} {step}", description=component.steps[step].help)
    add_step_flags(parser, component.steps[step])
    parser.set_defaults(command=component.name, step=step)
    return parser


def parse_step(component: Component, step: str, argv: list[str]) -> Options:
    """The options of `prefcraft <component> <step> ARGV`, as the command line would parse them."""
    return options_from_args(component.steps[step].options, step_parser(component, step).parse_args(argv))
