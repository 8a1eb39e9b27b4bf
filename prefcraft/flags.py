"""The flags every prefcraft command shares: the parser class, the settings group and the overrides it makes, and the
executor flags of the commands that pass them on. A step's own flags come from its options (prefcraft/options.py; the
optimizer group from prefcraft/optimizers/options.py)."""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from prefcraft.components.component import Component, Step
from prefcraft.executors import ExecutorOptions
from prefcraft.options import (
    Options,
    Renamed,
    add_option_flags,
    add_renamed_flag,
    as_flag,
    options_from_args,
    unwrap,
)
from prefcraft.settings import ENV_PREFIX, Settings

logger = logging.getLogger(__name__)


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

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """A former flag is read as the flag it is now before argparse sees it, so that it counts as given (a required
        flag too), with a warning."""
        args = sys.argv[1:] if args is None else list(args)
        former = {flag: action.new.option_strings[0] for action in self._actions if isinstance(action, Renamed)
                  for flag in action.option_strings}
        return super().parse_known_args([_current(arg, former) for arg in args], namespace)


def _current(arg: str, former: dict[str, str]) -> str:
    flag, equals, value = arg.partition("=")
    if flag not in former:
        return arg
    logger.warning("%s is now %s; %s goes in the next release", flag, former[flag], flag)
    return f"{former[flag]}{equals}{value}"


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
                    "--judge-model, ...), the server (--server-*), --threads, --seed, tracking and cache")
ROLES = ("task", "prompt", "judge")
FLAGGED_TABLES = (*ROLES, "server")
"""The settings tables whose every key has a flag, `--<table>-<key>`; the others are set in a file or a variable."""
FORMER_FLAGS = {"--backend": "--server-backend", "--port": "--server-port", "--slots": "--server-slots",
                "--served-model-name": "--server-served-model-name",
                "--tensor-parallel-size": "--server-tensor-parallel-size",
                "--max-model-len": "--server-max-model-len", "--experiment": "--mlflow-experiment"}
"""Settings flags' former spellings (old: new), taken for one release with a warning."""
UNMODELLED_KEYS = ("seed", "resume", "tracking_uri", "mlflow_experiment")
"""The settings a tracked step that runs no model takes; an untracked one takes none."""
ROLE_PURPOSES = {"prompt": "the model optimizers propose prompts with", "judge": "the model metrics grade with"}
METAVARS = {**{f"{role}.model": "LITELLM_MODEL" for role in ROLES}, "executable": "PATH", "api_base": "URL",
            "api_bases": "URL", "tracking_uri": "URI",
            "temperature": "T", "api_key_env": "VARIABLE", "host": "HOST", "server.model": "MODEL"}
"""Metavars by settings key, else by the key's last name; else by type."""


@dataclass(frozen=True)
class SettingFlag:
    """A setting's flag: its spelling, its argparse dest and the settings key (TOML, dotted) it sets."""

    flag: str
    dest: str
    key: str
    field: FieldInfo


def _setting_flags() -> list[SettingFlag]:
    """A flag per setting, in the settings' order: `--<key>` at the top level (a switch on by default: `--no-<key>`),
    `--<table>-<key>` in a flagged table."""
    found = []
    for name, field in Settings.model_fields.items():
        table, _ = unwrap(field.annotation, [])
        if isinstance(table, type) and issubclass(table, BaseModel):
            if name in FLAGGED_TABLES:
                found += [SettingFlag(as_flag(f"{name}_{key}"), f"{name}_{key}", f"{name}.{key}", inner)
                          for key, inner in table.model_fields.items()]
        else:
            flag = as_flag(f"no_{name}" if field.default is True else name)
            found.append(SettingFlag(flag, name, name, field))
    return found


SETTING_FLAGS = _setting_flags()
SETTING_KEYS = {flag.dest: flag.key for flag in SETTING_FLAGS}
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
                       help="TOML settings file, over the defaults and under the PREFCRAFT_* variables (default: none)"
                       if listed else argparse.SUPPRESS)
    _add_flags(group, SETTING_FLAGS, listed)


def add_some_settings_flags(parser: argparse.ArgumentParser, title: str, keys: Callable[[str], bool]) -> None:
    """The settings flags of a command that uses only the settings whose `keys` it takes (`prefcraft serve`: the
    server's), and the config file, under `title`."""
    group = parser.add_argument_group(title)
    group.add_argument("--config", type=Path, metavar="PATH", help="TOML settings file (default: none)")
    _add_flags(group, [flag for flag in SETTING_FLAGS if keys(flag.key)], listed=True)


def _add_flags(group: argparse._ArgumentGroup, flags: list[SettingFlag], listed: bool) -> None:
    """`flags` on `group`, unset unless given, each former spelling of one with them; `listed`: shown with their TOML
    keys and variables, else taken but not shown."""
    for setting in flags:
        action = group.add_argument(setting.flag, dest=setting.dest, default=None, **_flag_spec(setting))
        action.help = (f"{action.help}; TOML {setting.key}, variable {environment_variable(setting.key)}" if listed
                       else argparse.SUPPRESS)
    given = {flag.flag for flag in flags}
    for old, new in FORMER_FLAGS.items():
        if new in given:
            add_renamed_flag(group, old, new)


def _flag_spec(setting: SettingFlag) -> dict[str, Any]:
    """How argparse takes the setting, and its help: the field's description, or the task model's flag for another
    role, and its default."""
    table, _, name = setting.key.rpartition(".")
    field = setting.field
    annotation, _ = unwrap(field.annotation, [])
    if table in ROLE_PURPOSES and name == "model":
        text = f"{ROLE_PURPOSES[table]}: a litellm model string (default: the task model)"
    elif table in ROLE_PURPOSES:
        text = f"{as_flag(f'task_{name}')} for the {table} model (default: the task model's)"
    else:
        purpose = "the model the programs run on: a " if setting.key == "task.model" else ""
        text = f"{purpose}{field.description}"
        if "default" not in text and annotation is not bool:
            default = field.get_default(call_default_factory=True)
            shown = " ".join(map(str, default)) if isinstance(default, list) else default
            text += f" (default: {'none' if shown in (None, '') else shown})"
    spec: dict[str, Any] = {"help": text}
    if setting.key == "server.extra_args":  # flags for another program: one quoted string, split as a shell would
        return spec | {"type": shlex.split, "metavar": "'ARGS'"}
    if annotation is bool:
        if setting.flag.startswith("--no-"):
            spec["help"] = f"turn off (default: on): {text}"
        if field.default is None:
            return spec | {"action": argparse.BooleanOptionalAction}
        return spec | {"action": "store_false" if field.default else "store_true"}
    if get_origin(annotation) is list:
        spec["nargs"] = "+"
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is Literal:
        return spec | {"choices": get_args(annotation)}
    metavar = METAVARS.get(setting.key) or METAVARS.get(name)
    if annotation in (int, float):
        spec["type"] = annotation
        metavar = metavar or ("N" if annotation is int else "SECONDS" if name.endswith("_s") else "X")
    elif annotation is Path:
        spec["type"] = Path
        metavar = metavar or "PATH"
    return spec | {"metavar": metavar or "NAME"}


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
    server, tracking), taken but shown as one line; a step that runs no model takes only the tracking settings, or
    none when it is not tracked either. The usage line names the required flags and the groups."""
    add_option_flags(parser, step.options)
    if step.models:
        add_settings_flags(parser)
    elif step.tracked:
        add_some_settings_flags(parser, "settings", lambda key: key in UNMODELLED_KEYS)
    parser.set_defaults(**step.settings_defaults)
    required = [f"{action.option_strings[0]} {action.metavar or action.dest.upper()}"
                f"{' ...' if action.nargs in ('+', '*') else ''}" for action in parser._actions if action.required]
    settings = ["[shared settings]"] if step.models else ["[settings]"] if step.tracked else []
    parser.usage = " ".join(["%(prog)s", *required, "[flags of this step]", *settings])


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
