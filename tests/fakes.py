"""Fakes the tests share in place of MLflow."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrackedRun:
    name: str
    params: dict[str, Any]
    nested: bool
    metrics: dict[str, float] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


class FakeTracker:
    """A `prefcraft.compile_gate.Tracker` that keeps every run it was asked to open, with what was logged to it."""

    def __init__(self) -> None:
        self.runs: list[TrackedRun] = []
        self._active: list[TrackedRun] = []

    @contextmanager
    def run(self, name: str, params: Mapping[str, Any] | None = None, *, nested: bool = False) -> Iterator[TrackedRun]:
        run = TrackedRun(name, dict(params or {}), nested)
        self.runs.append(run)
        self._active.append(run)
        try:
            yield run
        finally:
            self._active.pop()

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        self._active[-1].metrics.update(metrics)

    def log_file(self, path: Path) -> None:
        self._active[-1].files.append(path)

    def named(self, name: str) -> TrackedRun:
        [run] = [run for run in self.runs if run.name == name]
        return run
