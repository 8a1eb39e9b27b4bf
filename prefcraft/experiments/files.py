"""Experiments as configuration: one TOML file names a component, its steps in the order they run with their options,
and the settings. `prefcraft experiment run FILE` runs it (prefcraft/experiments/running.py); `check` validates it.

A step's options are the fields of its job type (prefcraft/options.py), which its command-line flags are made from
(`--max-instances 3` is `max_instances = 3`). Settings flags (models, server, tracking) are not step options: they go
in the `[settings]` tables, which are the tables of a `--config` settings file.
"""

from __future__ import annotations

import logging
import re
import tomllib
import types
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefcraft.errors import ConfigError
from prefcraft.executors import Executor
from prefcraft.flags import settings_flag_names
from prefcraft.options import Options, SampleSource, check_options, format_problem, value_under
from prefcraft.registry import COMPONENTS
from prefcraft.settings import Settings, load_settings
from prefcraft.tracking.models import is_model_uri

logger = logging.getLogger(__name__)

ComponentName = Literal[tuple(COMPONENTS)]  # type: ignore[valid-type]
OPTIONS_HINT = ("a step's options are its flags, '-' written '_' (`--max-instances 3` is `max_instances = 3`; see "
                "`prefcraft <component> <step> --help`); models, server and tracking go in the [settings] tables")


EXPERIMENT_KEYS = {"name", "description", "component", "steps"}  # a settings file has none of them
HUB_DATASET_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
SOURCE_OPTION = "data"
"""What a `SampleSource` step reads (`SampleSource.source`): a local file or folder, or a Hugging Face dataset."""
WRITTEN_OPTION = "output"
"""The file a step writes: every step that writes a file names it --output."""
MULTI_LINE = '"""'
QUOTED = re.compile(r'""".*?"""|"""|"(?:[^"\\]|\\.)*"|\'[^\']*\'')  # a string, or a multi-line one opening
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
PATHS_HINT = ("paths are relative to the current directory (run from the repository root), and a step may read what "
              "an earlier step of the file writes: get each file as the file's comments say, or give your copy's path")


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


def with_executor(steps: list[Step], executor: Executor | None, address: str | None = None,
                  workers: int | None = None) -> list[Step]:
    """The steps with `experiment run`'s --executor, --address and --workers given to each step that takes them (fit,
    evaluate), over the file's options; the other steps run here, and the log says so once. A ConfigError, before
    anything runs, when --executor is given and no step takes it."""
    given = {name: value for name, value in (("executor", executor), ("address", address), ("workers", workers))
             if value is not None}
    if not given:
        return steps
    local = [step.name for step in steps if "executor" not in type(step.options).model_fields]
    if executor is not None and len(local) == len(steps):
        raise ConfigError(f"--executor {executor}: no step of this experiment ({', '.join(local)}) takes it",
                          "run it without --executor; of the commands, fit and evaluate run in workers")
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


def check_experiment(path: Path) -> Experiment:
    """`load_experiment`, then every local path the file names exists (`missing_paths`): what `experiment check` and
    `experiment run` do before anything runs. The missing ones are one ConfigError naming the file, and each one's step
    and key with what the file's comments say of it."""
    experiment = load_experiment(path)
    if missing := missing_paths(path, experiment):
        raise ConfigError(f"{path}: {'; '.join(map(str, missing))}", PATHS_HINT)
    return experiment


@dataclass(frozen=True)
class MissingPath:
    key: str
    """Where the file names it: `steps.fit.persona_prompt`, `settings.server.model`."""
    value: str
    comments: tuple[str, ...]
    """The sentences of the file's comments that name it (its path or its file name): how to get it, if anything."""

    def __str__(self) -> str:
        said = "; the file says: " + " / ".join(f'"{sentence}"' for sentence in self.comments) if self.comments else ""
        return f"{self.key}: {self.value}: no such file or folder{said}"


def missing_paths(path: Path, experiment: Experiment) -> list[MissingPath]:
    """The local paths the experiment in `path` reads that do not exist, in the file's order: of each step, the
    options its job type reads a path from (`read_path_options`) and the names that the loaders read as a local file
    (`names_local_path`) but not what an earlier step writes; of the settings, the model server's model and
    executable. Outputs, which the run makes, are not checked, nor dataset names, which the run looks up."""
    comments = comment_sentences(path.read_text(encoding="utf-8"))
    written: set[Path] = set()
    missing = []
    for step, given in experiment.steps.items():
        options = COMPONENTS[experiment.component].steps[step].options
        read = read_path_options(options)
        for name, value in given.items():
            if _names_read_path(name, value, read) and not _exists(value, written):
                missing.append(_missing(f"steps.{step}.{name}", str(value), comments))
        written |= {Path(value).expanduser() for name, value in given.items()
                    if name not in read and isinstance(value, Path)}
    missing += [_missing(key, value, comments) for key, value in _server_paths(experiment.settings)
                if not Path(value).expanduser().exists()]
    return missing


def read_path_options(options: type[Options]) -> set[str]:
    """The options of a job type that name a file or folder the step reads: those typed as a path with no default path
    (the optional ones, default None, and the required ones) but the step's `output`. A path option with a default
    path (output_dir, fitted_dir, a judge, pairs) is where the component's steps write for each other: a run makes
    it."""
    return {name for name, field in options.model_fields.items()
            if Path in _types(field.annotation) and not isinstance(field.default, Path) and name != WRITTEN_OPTION}


def _types(annotation: Any) -> set[Any]:
    """The types an annotation admits: `FilePath | None` admits Path and None."""
    if get_origin(annotation) is Annotated:
        return _types(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return set().union(*map(_types, get_args(annotation)))
    return {annotation}


def _server_paths(settings: Settings) -> list[tuple[str, str]]:
    """The model server's local paths, as its backends read them: llama.cpp's model is a GGUF file, vLLM's a local
    folder when it names one (else a Hugging Face id); an executable is a path when it holds a /, else a name on
    PATH."""
    server, paths = settings.server, []
    if server.model and (server.backend == "llamacpp" or names_local_path(server.model)):
        paths.append(("settings.server.model", server.model))
    if server.executable and "/" in server.executable:
        paths.append(("settings.server.executable", server.executable))
    return paths


def _names_read_path(name: str, value: Any, read: set[str]) -> bool:
    """Whether a step's option names a local path it reads: a path option it reads (`read_path_options`), but an
    MLflow model URI, or a name the loaders read as a local file or folder."""
    if name in read:
        return not is_model_uri(value)
    return isinstance(value, str) and names_local_path(value)


def _exists(value: str | Path, written: set[Path]) -> bool:
    path = Path(value).expanduser()
    return path.exists() or path in written


def _missing(key: str, value: str, comments: list[str]) -> MissingPath:
    names = {value, Path(value).name} - {""}
    return MissingPath(key, value, tuple(sentence for sentence in comments if any(name in sentence for name in names)))


def comment_sentences(text: str) -> list[str]:
    """The sentences of a TOML file's comments: each run of whole-line comments read as one text, and each comment
    after a value on its own. A # inside a string starts no comment."""
    blocks: list[list[str]] = []
    in_string, after_comment = False, False
    for line in text.splitlines():
        code, in_string = _code_of(line, in_string)
        comment = line[code.index("#") + 1:].strip() if "#" in code else None
        whole_line = comment is not None and not code[:code.index("#")].strip()
        if comment is not None and whole_line and after_comment:
            blocks[-1].append(comment)
        elif comment is not None:
            blocks.append([comment])
        after_comment = whole_line
    return [sentence for block in blocks for sentence in SENTENCE_END.split(" ".join(block)) if sentence]


def _code_of(line: str, in_string: bool) -> tuple[str, bool]:
    """`line` with its strings blanked out (so a # in one is no comment), and whether a multi-line string is still
    open after it; `in_string`: whether one was open before it."""
    code = line
    if in_string:
        if MULTI_LINE not in line:
            return "", True
        closed = line.index(MULTI_LINE) + len(MULTI_LINE)
        code = " " * closed + line[closed:]
    for quoted in QUOTED.finditer(code):
        if quoted.group() == MULTI_LINE:  # opens here, closes on a later line
            return code[:quoted.start()], True
        code = code[:quoted.start()] + " " * len(quoted.group()) + code[quoted.end():]
    return code, False


def vllm_serve_lines(text: str) -> list[str]:
    """The `vllm serve ...` commands in a TOML file's comments, a command continued over lines (`\\`) joined."""
    commands, pending = [], ""
    for line in text.splitlines():
        if not line.startswith("#"):
            continue
        content = line.lstrip("#").strip()
        pending = f"{pending} {content}".strip() if pending else content
        if pending.endswith("\\"):
            pending = pending[:-1].strip()
            continue
        if pending.startswith("vllm serve "):
            commands.append(pending)
        pending = ""
    return commands


def served_flag(serve_lines: list[str], flag: str, model: str | None = None) -> str | None:
    """The value of `flag` on the `vllm serve` line serving `model` (else the first line): None when the flag is
    absent, "on" for a flag without a value; a LookupError when no line serves `model`."""
    lines = [line for line in serve_lines if model is None or line.split()[2:3] == [model]]
    if not lines:
        raise LookupError(f"no `vllm serve {model or ''}` line in the file's comments")
    tokens = lines[0].split()
    if flag not in tokens:
        return None
    following = tokens[tokens.index(flag) + 1:]
    return following[0] if following and not following[0].startswith("--") else "on"


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
    """Each step's options, validated by its job type, and its `data` a local path or a dataset name
    (`check_dataset_names`); problems are added to `problems`."""
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
    check_dataset_names(component, validated, problems)
    return validated


def check_dataset_names(component: str, steps: dict[str, dict[str, Any]], problems: list[str]) -> None:
    """Each step's `data` that names no local path (`names_local_path`) is a well-formed Hugging Face dataset name
    (`owner/name`, or a canonical `name`); whether a local one exists is `missing_paths`'s to say."""
    for step, options in steps.items():
        value = options.get(SOURCE_OPTION)
        if (issubclass(COMPONENTS[component].steps[step].options, SampleSource) and isinstance(value, str)
                and not names_local_path(value) and not HUB_DATASET_NAME.fullmatch(value)):
            problems.append(f"steps.{step}.{SOURCE_OPTION}: {value!r} is neither a local file nor a Hugging Face "
                            "dataset name (owner/name)")


def names_local_path(value: str) -> bool:
    """Whether an option that takes a local file or folder or a Hugging Face dataset names a local one: as the loaders
    read it, one that exists or ends as a row file does (.json, .jsonl, .parquet); and one written as a path (from /,
    . or ~), which no dataset name is."""
    from prefcraft.loaders.personal_reward_bench import ROW_FILE_SUFFIXES  # the loaders' rule (imports DSPy)

    path = Path(value).expanduser()
    return path.exists() or path.suffix in ROW_FILE_SUFFIXES or value.startswith(("/", ".", "~"))


def validated_options(component: str, step: str, options: dict[str, Any], key: tuple[str, ...],
                      problems: list[str]) -> dict[str, Any] | None:
    """`options` checked against the step's job type, in the given order; or None, their problems (named under `key`)
    added to `problems`."""
    checked = check_options(COMPONENTS[component].steps[step].options, options, key, f"'prefcraft {component} {step}'",
                            problems, settings_flag_names())
    if checked is None:
        return None
    current = [type(checked).former_names().get(name, name) for name in options]  # a former name as it is now
    return {name: value_under(checked, name) for name in current}


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`, table by table (a flag for the task's api_base keeps the file's task model)."""
    merged = dict(base)
    for key, value in top.items():
        both_tables = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = _merged(merged[key], value) if both_tables else value
    return merged
