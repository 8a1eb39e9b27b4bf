"""Experiments as configuration: one TOML file names a component, its steps in the order they run with their options,
and the settings. `prefcraft experiment run FILE` runs it (prefcraft/commands/experiment.py); `check` validates it.

A step's options are the fields of its job type (prefcraft/options.py), which its command-line flags are made from
(`--max-instances 3` is `max_instances = 3`). Settings flags (models, server, tracking) are not step options: they go
in the `[settings]` tables, which are the tables of a `--config` settings file.
"""

from __future__ import annotations

import logging
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefcraft.errors import ConfigError
from prefcraft.executors import Executor
from prefcraft.flags import settings_flag_names
from prefcraft.options import Options, check_options, format_problem
from prefcraft.registry import COMPONENTS
from prefcraft.settings import Settings, load_settings

logger = logging.getLogger(__name__)

ComponentName = Literal[tuple(COMPONENTS)]  # type: ignore[valid-type]
OPTIONS_HINT = ("a step's options are its flags, '-' written '_' (`--max-instances 3` is `max_instances = 3`; see "
                "`prefcraft <component> <step> --help`); models, server and tracking go in the [settings] tables")


EXPERIMENT_KEYS = {"name", "description", "component", "steps"}  # a settings file has none of them
DATA_SOURCE_OPTIONS = ("data", "demographics")
"""Options that name what a step reads: a local file (or folder) or a Hugging Face dataset."""
LOCAL_DATA_SUFFIXES = {".json", ".jsonl", ".parquet"}
HUB_DATASET_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


class Experiment(BaseModel):
    """An experiment file. `steps` maps each step to its options, in the order the file lists them (and they run)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="names the MLflow parent run, experiment:<name>")
    description: str = ""
    component: ComponentName
    steps: dict[str, dict[str, Any]] = Field(min_length=1)
    settings: Settings = Field(default_factory=Settings, description="the tables of a --config settings file")

    def commands(self) -> list[Step]:
        """Each step as the command it runs: its job type's defaults, then the file's options."""
        return [Step(self.component, step, given, COMPONENTS[self.component].steps[step].options.model_validate(given))
                for step, given in self.steps.items()]


@dataclass(frozen=True)
class Step:
    component: str
    name: str
    given: dict[str, Any]
    """The options as the file gives them."""
    options: Options
    """All of them, the defaults included."""

    def __str__(self) -> str:
        given = ", ".join(f"{key}={value}" for key, value in self.given.items())
        return f"prefcraft {self.component} {self.name}" + (f" ({given})" if given else "")


def with_executor(steps: list[Step], executor: Executor | None, address: str | None = None) -> list[Step]:
    """The steps with `experiment run`'s --executor and --address given to each step that takes them (fit, evaluate),
    over the file's options; the other steps run here, and the log says so once. A ConfigError, before anything runs,
    when --executor is given and no step takes it."""
    given = {name: value for name, value in (("executor", executor), ("address", address)) if value is not None}
    if not given:
        return steps
    local = [step.name for step in steps if "executor" not in type(step.options).model_fields]
    if executor is not None and len(local) == len(steps):
        raise ConfigError(f"--executor {executor}: no step of this experiment ({', '.join(local)}) takes it",
                          "run it without --executor; of the commands, fit and evaluate run as Ray tasks")
    if executor is not None and local:
        logger.info("--executor %s: %s run here (no --executor)", executor, ", ".join(local))
    return [step if step.name in local else
            replace(step, given={**step.given, **given}, options=step.options.model_copy(update=given))
            for step in steps]


def load_experiment(path: Path) -> Experiment:
    """The experiment in `path`, its step options checked against their steps' job types. Every problem is reported
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
    """Each step's options, validated by its job type, and their data sources (`check_data_sources`); problems are
    added to `problems`."""
    component, steps = table.get("component"), table.get("steps")
    if component not in COMPONENTS or not isinstance(steps, dict):
        return {}  # the experiment's own validation has reported it
    validated = {}
    for step, options in steps.items():
        known = COMPONENTS[component].steps
        if step not in known:
            problems.append(f"steps.{step}: not a step of {component} (its steps: {', '.join(known)})")
            continue
        if not isinstance(options, dict):
            continue  # reported as not a table
        values = validated_options(component, step, options, ("steps", step), problems)
        if values is not None:
            validated[step] = values
    check_data_sources(validated, problems)
    return validated


def check_data_sources(steps: dict[str, dict[str, Any]], problems: list[str]) -> None:
    """Each step's `data` and `demographics` name an existing local file or folder, a file an earlier step writes
    (its `output`), or a well-formed Hugging Face dataset name (`owner/name`, or a canonical `name`). A value is read as
    a local path when it ends in .json, .jsonl or .parquet, starts with /, . or ~, or has more than one /."""
    written: set[Path] = set()
    for step, options in steps.items():
        for name in DATA_SOURCE_OPTIONS:
            value = options.get(name)
            if isinstance(value, str) and (problem := _data_source_problem(value, written)):
                problems.append(f"steps.{step}.{name}: {problem}")
        if isinstance(options.get("output"), str | Path):
            written.add(Path(options["output"]).expanduser())


def _data_source_problem(value: str, written: set[Path]) -> str | None:
    path = Path(value).expanduser()
    looks_local = path.suffix in LOCAL_DATA_SUFFIXES or value.startswith(("/", ".", "~")) or value.count("/") > 1
    if path.exists() or path in written:
        return None
    if looks_local:
        return f"{value}: no such file or folder (nor does an earlier step of this file write it)"
    if not HUB_DATASET_NAME.fullmatch(value):
        return f"{value!r} is neither an existing file nor a Hugging Face dataset name (owner/name)"
    return None


def validated_options(component: str, step: str, options: dict[str, Any], key: tuple[str, ...],
                      problems: list[str]) -> dict[str, Any] | None:
    """`options` checked against the step's job type, in the given order; or None, their problems (named under `key`)
    added to `problems`."""
    checked = check_options(COMPONENTS[component].steps[step].options, options, key, f"'prefcraft {component} {step}'",
                            problems, settings_flag_names())
    return None if checked is None else {name: getattr(checked, name) for name in options}


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`, table by table (a flag for the task's api_base keeps the file's task model)."""
    merged = dict(base)
    for key, value in top.items():
        both_tables = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merged(merged[key], value) if both_tables else value
    return merged
