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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefcraft.components.component import Component, ReportCharts
from prefcraft.errors import ConfigError
from prefcraft.registry import COMPONENTS
from prefcraft.report_parts.blocks import number
from prefcraft.report_parts.records import RunRecord
from prefcraft.tracking.models import logged_program_of

NO_CHARTS = ReportCharts()
EXPERIMENT_PREFIX, SWEEP_PREFIX = "experiment:", "sweep:"
# What DSPy's autologging logs on a compile's run: MIPROv2 a step series of full (and minibatch) evaluations, the
# other optimizers one `eval` value per evaluation.
TRAJECTORY_METRICS = ("eval_full", "eval_minibatch", "eval")
PAGE_SIZE = 1000


@dataclass(frozen=True)
class Store:
    uri: str
    experiment: str
    experiment_id: str
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
        raise ConfigError(f"no experiment named {experiment!r} in {uri}",
                          f"choose one with --mlflow-experiment: {names}")
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
    store = Store(uri, experiment, found.experiment_id, top[:max_runs])
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
    name = info.run_name or info.run_id
    return RunRecord(run_id=info.run_id, name=name, status=info.status, start_ms=info.start_time,
                     end_ms=info.end_time, params=dict(data.params), metrics=dict(data.metrics),
                     parent_id=data.tags.get("mlflow.parentRunId"), component=_started_by(name),
                     program=logged_program_of(data.tags))


def _started_by(name: str) -> str:
    if name.startswith(SWEEP_PREFIX):
        return "sweep"
    if name.startswith(EXPERIMENT_PREFIX):
        return "experiment"
    component = component_of_run(name)
    return component.title if component else "tour" if name == "tour" else ""


def charts_of(run: RunRecord) -> ReportCharts:
    """The report hooks of the component whose step started `run`; none for other runs."""
    component = component_of_run(run.name)
    return component.charts if component else NO_CHARTS


def component_of_run(name: str) -> Component | None:
    """The component whose steps start the run `name`, read from the registry as it is now."""
    return next((component for component in COMPONENTS.values() if name in component.run_names), None)


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
