"""One MLflow run as the report reads it: plain fields, its children, and what started it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from prefcraft.tracking.models import LoggedProgram

TRIAL = re.compile(r"trial-\d+")


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
    component: str = ""
    """What started the run: a component's step (the component's title), the tour, an experiment or a sweep; "" for
    the runs under a command."""
    pareto: list[int] | None = None
    """For a sweep: the trials of its study's Pareto front (the best, for one objective), as its pareto.json lists
    them; None where it logged none (a sweep that stopped)."""
    program: LoggedProgram | None = None
    """The compiled program the run logged as an MLflow model, if any."""

    @property
    def is_command(self) -> bool:
        return bool(self.component)

    @property
    def is_compile(self) -> bool:
        """A compile step's run: `<component>-compile`, or `compile-<what it compiles>`."""
        return self.is_command and "compile" in self.name.split("-")

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
