"""Read an MLflow tracking store into plain records: the only module of the report that talks to MLflow.

Every prefcraft command is one run, with child runs per user, method, inferrer or condition; a tour or an experiment
nests whole commands under its own run. DSPy's autologging adds its own children (`eval_full_<k>`) under compiles.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prefcraft.errors import ConfigError

# The run each command starts, and the component it belongs to.
COMMAND_RUNS = {
    "fit-synthesizeme": "SynthesizeMe", "evaluate": "SynthesizeMe", "compile-persona": "SynthesizeMe",
    "sensejudge-simulate": "SenseJudge", "sensejudge-select": "SenseJudge", "sensejudge-evaluate": "SenseJudge",
    "prefdisco-build-scenarios": "PrefDisco", "prefdisco-compile": "PrefDisco", "prefdisco-evaluate": "PrefDisco",
    "cupid-compile": "CUPID", "cupid-evaluate": "CUPID", "lampqa-compile": "LaMP-QA", "lampqa-evaluate": "LaMP-QA",
    "tour": "tour",
}
EXPERIMENT_PREFIX = "experiment:"
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

    @property
    def component(self) -> str:
        return "experiment" if self.name.startswith(EXPERIMENT_PREFIX) else COMMAND_RUNS.get(self.name, "")

    @property
    def is_command(self) -> bool:
        return bool(self.component)

    @property
    def is_compile(self) -> bool:
        return self.name == "compile-persona" or (self.is_command and self.name.endswith("-compile"))

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
        """Names repeat (every evaluate is `evaluate`): the start time tells runs apart in a figure."""
        return f"{self.name} ({self.started[5:19]})"

    def child(self, name: str) -> RunRecord | None:
        return next((run for run in self.children if run.name == name), None)


@dataclass(frozen=True)
class Store:
    uri: str
    experiment: str
    runs: list[RunRecord]
    """Top-level runs, newest first, each holding its descendants."""

    def command_runs(self) -> Iterator[tuple[int, RunRecord]]:
        """Every command's run with its nesting depth, depth first: top-level runs and the commands under a tour or an
        experiment (a top-level run prefcraft did not start counts as a command too)."""
        def walk(run: RunRecord, depth: int) -> Iterator[tuple[int, RunRecord]]:
            yield depth, run
            for child in run.children:
                if child.is_command:
                    yield from walk(child, depth + 1)

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
    for _, run in store.command_runs():
        if run.is_compile:
            run.histories = _histories(client, run)
    return store


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


def _histories(client: Any, run: RunRecord) -> dict[str, list[tuple[int, float]]]:
    histories = {}
    for key in TRAJECTORY_METRICS:
        if key in run.metrics:
            points = sorted(client.get_metric_history(run.run_id, key), key=lambda m: (m.step, m.timestamp))
            histories[key] = [(point.step, point.value) for point in points]
    return histories
