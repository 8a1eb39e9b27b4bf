"""Read an MLflow tracking store into plain records: the only module of the report that talks to MLflow.

Every prefcraft command is one run, with child runs per user, method, inferrer or condition; a tour or an experiment
nests whole commands under its own run, a sweep (`sweep:<name>`) a run per trial (`trial-<n>`, its params the values
tried) with the compile it ran under it. DSPy's autologging adds its own children (`eval_full_<k>`) under compiles.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prefcraft.components.component import Component, ReportCharts
from prefcraft.errors import ConfigError
from prefcraft.html_report.blocks import number
from prefcraft.registry import COMPONENTS

# The run each component's steps start, and that component.
RUN_COMPONENTS: dict[str, Component] = {name: component for component in COMPONENTS.values()
                                        for name in component.run_names}
# The run each command starts, and what it belongs to: a component (by its title), or the tour.
COMMAND_RUNS = {**{name: component.title for name, component in RUN_COMPONENTS.items()}, "tour": "tour"}
NO_CHARTS = ReportCharts()
EXPERIMENT_PREFIX, SWEEP_PREFIX = "experiment:", "sweep:"
TRIAL = re.compile(r"trial-\d+")
# What DSPy's autologging logs on a compile's run: MIPROv2 a step series of full (and minibatch) evaluations, the
# other optimizers one `eval` value per evaluation.
TRAJECTORY_METRICS = ("eval_full", "eval_minibatch", "eval")
PAGE_SIZE = 1000


@dataclass
class RunRecord:
    run_id: str
    name: str
    status: str
    start_ms: int
    end_ms: int | None
    params: dict[str, str]
    metrics: dict[str, float]
    parent_id: str | None
    children: list[RunRecord] = field(default_factory=list)
    # (step, value) in logging order, for a compile's trajectory metrics only
    histories: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    sweep_trial: str = ""
    """For the command a sweep's trial ran: the sweep, the trial and the values it tried."""
    pareto: list[int] | None = None
    """For a sweep: the trials of its study's Pareto front (the best, for one objective), as its pareto.json lists
    them; None where it logged none (a sweep that stopped)."""

    @property
    def component(self) -> str:
        if self.name.startswith(SWEEP_PREFIX):
            return "sweep"
        return "experiment" if self.name.startswith(EXPERIMENT_PREFIX) else COMMAND_RUNS.get(self.name, "")

    @property
    def is_command(self) -> bool:
        return bool(self.component)

    @property
    def is_compile(self) -> bool:
        """A compile step's run: `<component>-compile`, or `compile-<what it compiles>`."""
        return self.is_command and "compile" in self.name.split("-")

    @property
    def charts(self) -> ReportCharts:
        """The report hooks of the component whose step started the run; none for other runs."""
        component = RUN_COMPONENTS.get(self.name)
        return component.charts if component else NO_CHARTS

    @property
    def trials(self) -> list[RunRecord]:
        return [child for child in self.children if TRIAL.fullmatch(child.name)] if self.component == "sweep" else []

    @property
    def commands(self) -> list[RunRecord]:
        """The commands nested under this run: its children that are, and the compile under each of a sweep's trials."""
        return [run for run in [*self.children, *(run for trial in self.trials for run in trial.children)]
                if run.is_command]

    @property
    def failed(self) -> bool:
        return self.status == "FAILED"

    @property
    def seconds(self) -> float | None:
        return None if self.end_ms is None else (self.end_ms - self.start_ms) / 1000

    @property
    def started(self) -> str:
        return datetime.fromtimestamp(self.start_ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")

    @property
    def label(self) -> str:
        """Names repeat (every evaluate is `evaluate`): the start time, and a sweep's trial, tell runs apart."""
        return f"{self.name} ({self.started[5:19]}{self.sweep_trial and ', ' + self.sweep_trial})"

    def child(self, name: str) -> RunRecord | None:
        return next((run for run in self.children if run.name == name), None)


@dataclass(frozen=True)
class Store:
    uri: str
    experiment: str
    runs: list[RunRecord]
    """Top-level runs, newest first, each holding its descendants."""

    def command_runs(self) -> Iterator[tuple[int, RunRecord]]:
        """Every command's run with its nesting depth, depth first: top-level runs and the commands under a tour, an
        experiment or a sweep's trials (a top-level run prefcraft did not start counts as a command too)."""
        def walk(run: RunRecord, depth: int) -> Iterator[tuple[int, RunRecord]]:
            yield depth, run
            for command in run.commands:
                yield from walk(command, depth + 1)

        for run in self.runs:
            yield from walk(run, 0)


def read_store(uri: str, experiment: str, max_runs: int) -> Store:
    """The `max_runs` most recent top-level runs of `experiment`, with all their descendants."""
    from mlflow import MlflowClient

    _check_exists(uri)
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        names = ", ".join(sorted(e.name for e in client.search_experiments())) or "none"
        raise ConfigError(f"no experiment named {experiment!r} in {uri}", f"choose one with --experiment: {names}")
    records, token = [], None
    while True:
        page = client.search_runs([found.experiment_id], order_by=["attributes.start_time DESC"],
                                  max_results=PAGE_SIZE, page_token=token)
        records += [_record(run) for run in page]
        token = page.token
        if not token:
            break
    by_id = {record.run_id: record for record in records}
    top = []
    for record in records:  # newest first, so children too; the report shows them oldest first
        parent = by_id.get(record.parent_id or "")
        if parent is None:
            top.append(record)
        else:
            parent.children.insert(0, record)
    store = Store(uri, experiment, top[:max_runs])
    for _, run in store.command_runs():  # a sweep before the commands under it
        if run.is_compile:
            run.histories = _histories(client, run)
        if run.component == "sweep":
            run.pareto = _pareto(client, run)
            for trial in run.trials:
                values = ", ".join(f"{key}={param(value)}" for key, value in trial.params.items() if key != "trial")
                for command in trial.children:
                    command.sweep_trial = f"{run.name} {trial.name}: {values}"
    return store


def param(text: str) -> str:
    """A param as MLflow holds it (text), a number shortened."""
    try:
        return number(float(text))
    except ValueError:
        return text


def _check_exists(uri: str) -> None:
    """MLflow creates an empty SQLite store where none is: a mistyped path would report on nothing."""
    match = re.fullmatch(r"sqlite:///(.+)", uri)
    if match and not Path(match.group(1)).is_file():
        raise ConfigError(f"no MLflow store at {uri}", "give the store the commands logged to with --tracking-uri")


def _record(run: Any) -> RunRecord:
    info, data = run.info, run.data
    return RunRecord(run_id=info.run_id, name=info.run_name or info.run_id, status=info.status,
                     start_ms=info.start_time, end_ms=info.end_time, params=dict(data.params),
                     metrics=dict(data.metrics), parent_id=data.tags.get("mlflow.parentRunId"))


def _pareto(client: Any, run: RunRecord) -> list[int] | None:
    if "pareto.json" not in {artifact.path for artifact in client.list_artifacts(run.run_id)}:
        return None
    with tempfile.TemporaryDirectory() as directory:
        report = json.loads(Path(client.download_artifacts(run.run_id, "pareto.json", directory)).read_text())
    return [entry["trial"] for entry in report["pareto"]]


def _histories(client: Any, run: RunRecord) -> dict[str, list[tuple[int, float]]]:
    histories = {}
    for key in TRAJECTORY_METRICS:
        if key in run.metrics:
            points = sorted(client.get_metric_history(run.run_id, key), key=lambda m: (m.step, m.timestamp))
            histories[key] = [(point.step, point.value) for point in points]
    return histories
