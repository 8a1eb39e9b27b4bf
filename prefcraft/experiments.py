"""Experiments as configuration: one TOML file names a component, its steps in the order they run with their options,
and the settings. `prefcraft experiment run FILE` runs it (prefcraft/commands/experiment.py); `check` validates it.

A step's options are its command-line flags keyed by dest (`--max-instances 3` is `max_instances = 3`). What a step
accepts, and of which type, is read from the command line's own parser, so a flag added to a command is an option of
its step with nothing to change here. Settings flags (models, server, tracking) are not step options: they go in the
`[settings]` tables, which are the tables of a `--config` settings file.
"""

from __future__ import annotations

import argparse
import logging
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from prefcraft.errors import ConfigError
from prefcraft.executors import Executor
from prefcraft.flags import Bounded, CommandParser, add_settings_flags, step_parser
from prefcraft.registry import COMPONENTS
from prefcraft.settings import Settings, load_settings

logger = logging.getLogger(__name__)

ComponentName = Literal[tuple(COMPONENTS)]  # type: ignore[valid-type]
OPTIONS_HINT = ("a step's options are its flags, '-' written '_' (`--max-instances 3` is `max_instances = 3`; see "
                "`prefcraft <component> <step> --help`); models, server and tracking go in the [settings] tables")


EXPERIMENT_KEYS = {"name", "description", "component", "steps"}  # a settings file has none of them


class Experiment(BaseModel):
    """An experiment file. `steps` maps each step to its options, in the order the file lists them (and they run)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="names the MLflow parent run, experiment:<name>")
    description: str = ""
    component: ComponentName
    steps: dict[str, dict[str, Any]] = Field(min_length=1)
    settings: Settings = Field(default_factory=Settings, description="the tables of a --config settings file")

    def commands(self) -> list[Step]:
        """Each step as the command it runs: the parser's defaults, then the file's options."""
        steps = []
        for step, options in self.steps.items():
            steps.append(Step(step, (self.component, step), options, step_args(self.component, step, options)))
        return steps


@dataclass(frozen=True)
class Step:
    name: str
    words: tuple[str, ...]
    """The command line without flags: ("cupid", "evaluate")."""
    options: dict[str, Any]
    args: argparse.Namespace

    def __str__(self) -> str:
        given = ", ".join(f"{key}={value}" for key, value in self.options.items())
        return f"prefcraft {' '.join(self.words)}" + (f" ({given})" if given else "")


def step_args(component: str, step: str, options: dict[str, Any]) -> argparse.Namespace:
    """The parsed flags of `prefcraft <component> <step>` given `options` (validated, by dest): the parser's defaults,
    then the options."""
    parser = _step_parsers(component)[step]
    defaults = {action.dest: parser.get_default(action.dest) for action in _option_actions(parser)}
    return argparse.Namespace(command=component, step=step, **{**defaults, **options})


def with_executor(steps: list[Step], executor: Executor | None, address: str | None = None) -> list[Step]:
    """The steps with `experiment run`'s --executor and --address given to each step that takes them (fit, evaluate),
    over the file's options; the other steps run here, and the log says so once. A ConfigError, before anything runs,
    when --executor is given and no step takes it."""
    given = {name: value for name, value in (("executor", executor), ("address", address)) if value is not None}
    if not given:
        return steps
    local = [step.name for step in steps if not hasattr(step.args, "executor")]
    if executor is not None and len(local) == len(steps):
        raise ConfigError(f"--executor {executor}: no step of this experiment ({', '.join(local)}) takes it",
                          "run it without --executor; of the commands, fit and evaluate run as Ray tasks")
    if executor is not None and local:
        logger.info("--executor %s: %s run here (no --executor)", executor, ", ".join(local))
    return [step if step.name in local else
            replace(step, options={**step.options, **given}, args=argparse.Namespace(**{**vars(step.args), **given}))
            for step in steps]


def load_experiment(path: Path) -> Experiment:
    """The experiment in `path`, its step options checked against their commands' parsers. Every problem is reported
    at once, as one ConfigError naming the file and each key."""
    table = read_toml(path, "experiment")
    problems: list[str] = []
    try:
        experiment = Experiment.model_validate(table)
    except ValidationError as error:
        problems += [format_problem(issue) for issue in error.errors()]
    validated = _validated_steps(table, problems)
    if problems:
        hint = OPTIONS_HINT if any(problem.startswith("steps.") for problem in problems) else None
        raise ConfigError(f"{path}: {'; '.join(problems)}", hint)
    return experiment.model_copy(update={"steps": validated})


def is_settings_file(path: Path) -> bool:
    """Whether `path` is a `--config` settings file (experiments/embedded.toml) rather than an experiment: it has only
    settings keys, and none of an experiment's own. A file that cannot be read is not one: loading it names the
    problem."""
    try:
        table = read_toml(path, "experiment")
    except ConfigError:
        return False
    return not table.keys() & EXPERIMENT_KEYS and table.keys() <= Settings.model_fields.keys()


def read_toml(path: Path, kind: str) -> dict[str, Any]:
    """The table in `path`; a missing or malformed file is a ConfigError naming it (`kind`: what the file holds)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such {kind} file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def experiment_settings(experiment: Experiment, config_file: Path | None, overrides: dict[str, Any]) -> Settings:
    """The settings an experiment runs on. Lowest first: defaults, a `--config` file, `PREFCRAFT_*` variables, the
    experiment's [settings], flags. The file beats the environment: a variable left in a shell does not change what an
    experiment runs, while a flag, given on purpose (a test's server, a tmp store), does."""
    return load_settings(config_file, _merged(experiment.settings.model_dump(exclude_unset=True), overrides))


def _validated_steps(table: dict[str, Any], problems: list[str]) -> dict[str, dict[str, Any]]:
    """Each step's options, validated by a model built from its parser; problems are added to `problems`."""
    component, steps = table.get("component"), table.get("steps")
    if component not in COMPONENTS or not isinstance(steps, dict):
        return {}  # the experiment's own validation has reported it
    validated = {}
    for step, options in steps.items():
        parsers = _step_parsers(component)
        if step not in parsers:
            problems.append(f"steps.{step}: not a step of {component} (its steps: {', '.join(parsers)})")
            continue
        if not isinstance(options, dict):
            continue  # reported as not a table
        values = validated_options(component, step, options, ("steps", step), problems)
        if values is not None:
            validated[step] = values
    return validated


def validated_options(component: str, step: str, options: dict[str, Any], key: tuple[str, ...],
                      problems: list[str]) -> dict[str, Any] | None:
    """`options` checked against the step's parser, in the given order; or None, their problems (named under `key`)
    added to `problems`."""
    try:
        values = _options_model(component, step).model_validate(options).model_dump(exclude_unset=True)
        return {name: values[name] for name in options}
    except ValidationError as error:
        command = f"'prefcraft {component} {step}'"
        problems += [format_problem(issue, key, command) for issue in error.errors()]
        return None


def format_problem(issue: Any, prefix: tuple[str, ...] = (), command: str | None = None) -> str:
    loc = (*prefix, *issue["loc"])
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    if issue["type"] == "extra_forbidden" and command and loc[-1] in _settings_dests():
        return f"{key}: a settings flag, not an option of {command}: set it in the [settings] tables"
    if issue["type"] == "extra_forbidden":
        return f"{key}: unknown option of {command}" if command else f"{key}: unknown key"
    if issue["type"] == "missing":
        return f"{key}: required option of {command} is missing" if command else f"{key}: missing"
    return f"{key}: {issue['msg']}"


@cache
def _step_parsers(component: str) -> dict[str, argparse.ArgumentParser]:
    return {step: step_parser(COMPONENTS[component], step) for step in COMPONENTS[component].steps}


@cache
def _settings_dests() -> frozenset[str]:
    """Every settings flag's dest, from the function that adds them to each command."""
    probe = CommandParser(add_help=False)
    add_settings_flags(probe)
    return frozenset(action.dest for action in probe._actions)


def _option_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """A step's own flags: not --help, not the settings flags."""
    return [action for action in parser._actions
            if action.default is not argparse.SUPPRESS and action.dest not in _settings_dests()]


@cache
def _options_model(component: str, step: str) -> type[BaseModel]:
    """A pydantic model of one step's options: a field per flag, of the flag's type, required where the flag is."""
    fields = {action.dest: (_option_type(action), ... if action.required else None)
              for action in _option_actions(_step_parsers(component)[step])}
    # Strict: TOML says what it means, so "3" is no int and 1 is no bool. Paths are written as strings.
    return create_model(f"{component}_{step}_options", __config__=ConfigDict(extra="forbid", strict=True), **fields)


def _option_type(action: argparse.Action) -> Any:
    if action.nargs == 0:
        return bool  # a switch: store_true, or store_false (`--no-shipped` is `use_shipped = false`)
    if isinstance(action.type, Bounded):
        value: Any = action.type.annotation()  # the flag's own bounds
    else:
        value = {int: int, float: float, Path: Annotated[Path, Field(strict=False)], None: str}[action.type]
    if action.choices:
        value = Literal[tuple(action.choices)]
    if action.nargs in ("+", "*"):
        return Annotated[list[value], Field(min_length=1 if action.nargs == "+" else 0)]
    return value


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`, table by table (a flag for the task's api_base keeps the file's task model)."""
    merged = dict(base)
    for key, value in top.items():
        both_tables = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merged(merged[key], value) if both_tables else value
    return merged
