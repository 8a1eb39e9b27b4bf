"""Sweeps: an Optuna study over one compile step's settings (demos, budgets, candidates, temperatures).

A sweep file names a component's compile step, its fixed `[options]` (checked as an experiment step's are), the
`[settings]`, the `[search]` space and the `[study]`. `prefcraft sweep run FILE` runs the trials still missing from the
study's storage (SQLite under runs/sweeps/<name>/ by default, or any database URL, shared or not), each a nested MLflow
run under `sweep:<name>`, then reports every complete trial and the Pareto front (runs/sweeps/<name>/pareto.json).
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from prefcraft.errors import ConfigError, DataError, ServerError
from prefcraft.experiments.files import (
    OPTIONS_HINT,
    Experiment,
    experiment_settings,
    read_toml,
    validated_options,
)
from prefcraft.files import write_text_atomic
from prefcraft.options import format_problem
from prefcraft.registry import COMPONENTS
from prefcraft.runner import run_step
from prefcraft.settings import ModelSettings, Settings
from prefcraft.tracking.runs import Tracker, data_digest, model_params, start_tracking

SWEEPS_DIR = Path("runs/sweeps")
# Components whose compile returns a CompileOutcome (a verdict and its usage). SynthesizeMe's compile-persona returns
# its verdict alone, without the usage a trial is scored by.
SweepComponent = Literal[tuple(name for name, component in COMPONENTS.items() if component.sweepable)]  # type: ignore[valid-type]
SETTINGS_PARAMETERS = ("task.temperature", "prompt.temperature")  # not the judge's: it grades every trial alike
TRIAL_PATHS = ("output", "output_dir")  # each trial's own, under runs/sweeps/<name>/trial-<n>/: nothing is shipped
OBJECTIVES = ("score", "gain", "lm_calls")
DIRECTION = re.compile(rf"(maximize|minimize) ({'|'.join(OBJECTIVES)})")
# These would fail every trial alike: the sweep stops. Any other error fails only its trial.
STOPPING_ERRORS = (ConfigError, DataError, ServerError)
HEARTBEAT_S = 60  # a RUNNING trial whose process stopped beating for 2 heartbeats is marked FAIL


class Parameter(BaseModel):
    """One searched value: `{type = "int", low, high[, step]}`, `{type = "float", low, high[, log]}` or
    `{type = "categorical", choices = [...]}`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["int", "float", "categorical"]
    low: int | float | None = None
    high: int | float | None = None
    step: int | None = Field(None, ge=1)
    log: bool = False
    choices: list[bool | int | float | str] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Parameter:
        if self.type == "categorical":
            if self.choices is None or {self.low, self.high, self.step} != {None} or self.log:
                raise ValueError("a categorical parameter takes choices only")
            return self
        if self.low is None or self.high is None or self.choices is not None:
            raise ValueError(f"an {self.type} parameter takes low and high, not choices")
        if self.type == "int" and not (isinstance(self.low, int) and isinstance(self.high, int)):
            raise ValueError("low and high of an int parameter are integers")
        if self.type == "float" and self.step is not None:
            raise ValueError("step is for int parameters")
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) is above high ({self.high})")
        if self.log and self.low <= 0:
            raise ValueError("a log-scale range starts above 0")
        return self

    def values(self) -> list[Any]:
        """The values to check against what the parameter sets: its bounds or its choices."""
        return list(self.choices) if self.choices is not None else [self.low, self.high]


def _direction(text: str) -> str:
    if not DIRECTION.fullmatch(text):
        raise ValueError(f"'{text}' is not '<maximize|minimize> <{'|'.join(OBJECTIVES)}>'")
    return text


def _storage_url(url: str | None) -> str | None:
    if url is not None:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            make_url(url)
        except ArgumentError:
            raise ValueError(f"'{url}' is not a database URL (sqlite:///path.db, postgresql://...)") from None
    return url


class Study(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    n_trials: int = Field(ge=1, description="complete trials wanted in the study, those of earlier runs included")
    directions: list[Annotated[str, AfterValidator(_direction)]] = Field(
        default=["maximize score", "minimize lm_calls"], min_length=1)
    storage: Annotated[str | None, AfterValidator(_storage_url)] = Field(
        None, description="Optuna storage URL (default sqlite:///runs/sweeps/<name>/optuna.db)")
    seed: int = 0

    @model_validator(mode="after")
    def _distinct(self) -> Study:
        if len({self.objective(i) for i in range(len(self.directions))}) < len(self.directions):
            raise ValueError("an objective is named twice in directions")
        return self

    def objective(self, index: int) -> str:
        return self.directions[index].split()[1]


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^\w[\w.-]*$",
                      description="the Optuna study, runs/sweeps/<name>/, MLflow's sweep:<name>")
    description: str = ""
    component: SweepComponent
    step: Literal["compile"]
    options: dict[str, Any] = Field(default_factory=dict, description="the step's fixed options, as in experiments")
    settings: Settings = Field(default_factory=Settings, description="the tables of a --config settings file")
    search: dict[str, Parameter] = Field(min_length=1)
    study: Study

    @property
    def directory(self) -> Path:
        return SWEEPS_DIR / self.name

    @property
    def storage(self) -> str:
        return self.study.storage or f"sqlite:///{self.directory / 'optuna.db'}"

    def experiment(self, options: dict[str, Any] | None = None) -> Experiment:
        """The sweep's step as a one-step experiment, with `options` over the fixed ones."""
        return Experiment(name=self.name, description=self.description, component=self.component,
                          steps={self.step: {**self.options, **(options or {})}}, settings=self.settings)


def load_sweep(path: Path) -> Sweep:
    """The sweep in `path`, its options and searched names checked against the step's job type. Every problem is
    reported at once, as one ConfigError naming the file and each key."""
    table = read_toml(path, "sweep")
    if isinstance(table.get("search"), dict):
        table["search"] = _flat_search(table["search"])
    problems: list[str] = []
    sweep = None
    try:
        sweep = Sweep.model_validate(table)
    except ValidationError as error:
        problems += [format_problem(issue) for issue in error.errors()]
    component, step, options = table.get("component"), table.get("step"), table.get("options", {})
    validated = None
    if component in get_args(SweepComponent) and step == "compile" and isinstance(options, dict):
        validated = validated_options(component, step, options, ("options",), problems)
        problems += [f"options.{name}: set by the sweep, per trial" for name in TRIAL_PATHS if name in options]
        search = table.get("search")
        if isinstance(search, dict):
            problems += _search_problems(component, step, options, search)
    if problems:
        hint = OPTIONS_HINT if any(problem.startswith(("options.", "search.")) for problem in problems) else None
        raise ConfigError(f"{path}: {'; '.join(problems)}", hint)
    assert sweep is not None and validated is not None
    return sweep.model_copy(update={"options": validated})


def _flat_search(search: dict[str, Any]) -> dict[str, Any]:
    """TOML reads `task.temperature = {...}` unquoted as a table `task` holding `temperature`: the same name."""
    flat = {}
    for name, table in search.items():
        nested = name in {path.split(".")[0] for path in SETTINGS_PARAMETERS} and isinstance(table, dict)
        if nested and "type" not in table:
            flat.update({f"{name}.{key}": value for key, value in table.items()})
        else:
            flat[name] = table
    return flat


def _search_problems(component: str, step: str, options: dict[str, Any], search: dict[str, Any]) -> list[str]:
    """Each searched name is a settings path or an option of the step, and its values fit what it sets. A parameter
    that is no valid range or choice has been reported by the sweep's own validation."""
    problems: list[str] = []
    for name, table in search.items():
        try:
            values = Parameter.model_validate(table).values()
        except ValidationError:
            continue
        if name in TRIAL_PATHS:
            problems.append(f"search.{name}: set by the sweep, per trial")
        elif name in options:
            problems.append(f"search.{name}: also fixed in [options]: keep one")
        elif name in SETTINGS_PARAMETERS:
            for value in values:
                try:
                    ModelSettings.model_validate({"temperature": value}, strict=True)
                except ValidationError as error:
                    problems.append(f"search.{name}: {error.errors()[0]['msg']}")
                    break
        else:
            for value in values:  # the first bad value is enough
                if validated_options(component, step, {name: value}, ("search",), problems) is None:
                    break
    return problems


@dataclass(frozen=True)
class SweepOutcome:
    study_name: str
    storage: str
    ran: int
    """Trials this run started (complete or failed)."""
    complete: list[Any]
    """Every complete trial of the study (optuna FrozenTrial), earlier runs' included."""
    pareto: list[Any]


def run_sweep(path: Path, sweep: Sweep, config_file: Path | None, overrides: dict[str, Any],
              emit: Callable[[str], None]) -> SweepOutcome:
    """Runs the trials the study still lacks (`n_trials` minus its complete ones) and reports the Pareto front."""
    from optuna.trial import TrialState

    settings = experiment_settings(sweep.experiment(), config_file, overrides)
    study = _open_study(sweep)
    remaining = sweep.study.n_trials - len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    shown_storage = _without_password(sweep.storage)
    params = {"sweep": sweep.name, "description": sweep.description, "component": sweep.component, "step": sweep.step,
              "config": str(path), "config_digest": data_digest(path), "study_name": sweep.name,
              "storage": shown_storage, "directions": sweep.study.directions, "n_trials": sweep.study.n_trials,
              "options": sweep.options, "search": {name: p.model_dump(exclude_defaults=True)
                                                   for name, p in sweep.search.items()}, **model_params(settings)}
    tracker = start_tracking(settings)
    with tracker.run(f"sweep:{sweep.name}", params):
        tracker.log_file(path)
        emit(f"=== sweep {sweep.name}: {len(study.trials)} trials in {shown_storage}, {max(remaining, 0)} to run")
        if remaining > 0:
            objective = _Objective(sweep, config_file, overrides, tracker, emit)
            study.optimize(objective, n_trials=remaining, catch=(TrialError,))
        complete = study.get_trials(states=(TrialState.COMPLETE,))
        pareto = study.best_trials if complete else []
        report = _pareto_report(sweep, shown_storage, complete, pareto)
        tracker.log_file(write_text_atomic(sweep.directory / "pareto.json", _json(report)))
        emit(format_trials(sweep, complete, pareto))
    return SweepOutcome(sweep.name, shown_storage, max(remaining, 0), complete, pareto)


class TrialError(Exception):
    """A trial's compile failed for a reason of its own: Optuna records it FAIL and the sweep goes on."""


class _Objective:
    """One trial: the step with the suggested values, its outputs under runs/sweeps/<name>/trial-<n>/."""

    def __init__(self, sweep: Sweep, config_file: Path | None, overrides: dict[str, Any], tracker: Tracker,
                 emit: Callable[[str], None]):
        self.sweep, self.config_file, self.overrides, self.tracker, self.emit = (sweep, config_file, overrides,
                                                                                 tracker, emit)

    def __call__(self, trial: Any) -> list[float]:
        values = {name: _suggest(trial, name, parameter) for name, parameter in self.sweep.search.items()}
        options = {name: value for name, value in values.items() if name not in SETTINGS_PARAMETERS}
        trial_dir = self.sweep.directory / f"trial-{trial.number}"
        experiment = self.sweep.experiment(options)
        (step,) = experiment.commands()
        options = step.options.model_copy(update={"output": trial_dir / step.options.output.name,
                                                  "output_dir": trial_dir})
        settings = experiment_settings(experiment, self.config_file, self._trial_overrides(values, trial_dir))
        self.emit(f"\n=== sweep {self.sweep.name}, trial {trial.number}: "
                  + ", ".join(f"{name}={_cell(value)}" for name, value in values.items()))
        started = time.perf_counter()
        with self.tracker.run(f"trial-{trial.number}", {"trial": trial.number, **values}, nested=True):
            try:
                outcome = run_step(step.component, step.name, options, settings)
            except STOPPING_ERRORS:
                raise
            except Exception as error:
                raise TrialError(f"trial {trial.number}: {type(error).__name__}: {error}") from error
            verdict = outcome.verdict
            measured = {"score": verdict.compiled_score, "gain": verdict.compiled_score - verdict.uncompiled_score,
                        "lm_calls": float(outcome.usage.calls)}
            self.tracker.log_metrics({
                **measured, **outcome.usage.as_metrics(), "compiled_score": verdict.compiled_score,
                "uncompiled_score": verdict.uncompiled_score, "won": float(verdict.won),
                "seconds": time.perf_counter() - started})
        for key, value in {"compiled_score": verdict.compiled_score, "uncompiled_score": verdict.uncompiled_score,
                           "won": verdict.won, "lm_calls": outcome.usage.calls,
                           "prompt_tokens": outcome.usage.prompt_tokens,
                           "completion_tokens": outcome.usage.completion_tokens, "output": str(verdict.path)}.items():
            trial.set_user_attr(key, value)
        self.emit(f"=== trial {trial.number} done: " + ", ".join(f"{k}={_cell(v)}" for k, v in measured.items()))
        return [measured[self.sweep.study.objective(i)] for i in range(len(self.sweep.study.directions))]

    def _trial_overrides(self, values: dict[str, Any], trial_dir: Path) -> dict[str, Any]:
        """The flags, then the suggested temperatures over them. A cache of its own per trial: one trial's answers
        would otherwise make the next one's shared calls free, and lm_calls would measure the order of the trials."""
        overrides = {key: dict(value) if isinstance(value, dict) else value for key, value in self.overrides.items()}
        for name, value in values.items():
            if name in SETTINGS_PARAMETERS:
                role, key = name.split(".")
                overrides.setdefault(role, {})[key] = value
        return {**overrides, "cache_dir": trial_dir / "cache"}


def _open_study(sweep: Sweep) -> Any:
    import optuna
    from sqlalchemy.engine import make_url

    database = make_url(sweep.storage).database
    if sweep.storage.startswith("sqlite:") and database:
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # the heartbeat: Optuna's own way
        storage = optuna.storages.RDBStorage(sweep.storage, heartbeat_interval=HEARTBEAT_S,
                                             grace_period=2 * HEARTBEAT_S)
    study = optuna.create_study(study_name=sweep.name, storage=storage, load_if_exists=True,
                                directions=[direction.split()[0] for direction in sweep.study.directions])
    if [d.name.lower() for d in study.directions] != [d.split()[0] for d in sweep.study.directions]:
        raise ConfigError(f"study {sweep.name} in {_without_password(sweep.storage)} has other directions than the "
                          "file's", "name the sweep anew, or put the directions back")
    # TPE for one objective or several: NSGA-II's first generation is 50 random trials, more than most compile sweeps.
    # Seeded past the trials already run, so a resumed sweep does not replay the first run's startup suggestions.
    study.sampler = optuna.samplers.TPESampler(seed=sweep.study.seed + len(study.trials))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)  # trials left RUNNING by a process that died
    return study


def _suggest(trial: Any, name: str, parameter: Parameter) -> Any:
    if parameter.type == "int":
        return trial.suggest_int(name, parameter.low, parameter.high, step=parameter.step or 1, log=parameter.log)
    if parameter.type == "float":
        return trial.suggest_float(name, parameter.low, parameter.high, log=parameter.log)
    return trial.suggest_categorical(name, parameter.choices)


def _pareto_report(sweep: Sweep, storage: str, complete: list[Any], pareto: list[Any]) -> dict[str, Any]:
    return {"sweep": sweep.name, "study_name": sweep.name, "storage": storage, "directions": sweep.study.directions,
            "complete_trials": len(complete),
            "pareto": [{"trial": trial.number, "params": trial.params, "objectives": _objectives(sweep, trial),
                        "attrs": trial.user_attrs} for trial in pareto]}


def _objectives(sweep: Sweep, trial: Any) -> dict[str, float]:
    return {sweep.study.objective(i): value for i, value in enumerate(trial.values)}


def format_trials(sweep: Sweep, complete: list[Any], pareto: list[Any]) -> str:
    """Every complete trial, its parameters and objectives; `*` marks the Pareto front."""
    front = {trial.number for trial in pareto}
    header = ["trial", *sweep.search, *(sweep.study.objective(i) for i in range(len(sweep.study.directions))), "pareto"]
    rows = [[str(trial.number), *(_cell(trial.params.get(name)) for name in sweep.search),
             *(_cell(value) for value in trial.values), "*" if trial.number in front else ""] for trial in complete]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
             for row in [header, *rows]]
    numbers = ", ".join(map(str, sorted(front))) or "none"
    summary = f"Pareto front ({', '.join(sweep.study.directions)}): trials {numbers}"
    return "\n".join([f"\n{sweep.name}: {len(complete)} complete trials", *lines, summary])


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _without_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"
