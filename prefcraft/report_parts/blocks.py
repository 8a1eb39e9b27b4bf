"""The report's blocks (figures, tables, sections) and the estimate rows its charts are drawn from, with the readers
of a run's metrics that the components' report hooks share.

The components' charts import this module: it imports nothing that reads the registry or draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from prefcraft.report_parts.records import RunRecord

NAN = math.nan


@dataclass(frozen=True)
class Plot:
    title: str
    png: bytes
    caption: str = ""


class Link(NamedTuple):
    """A table cell that links elsewhere (the MLflow UI)."""

    text: str
    href: str


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: list[tuple[str | Link, ...]]
    failed: frozenset[int] = frozenset()
    """Indices of rows shown as failed."""
    title: str = ""


@dataclass(frozen=True)
class Details:
    """A collapsible list of name-value rows; open from the start when it explains a failure."""

    summary: str
    rows: list[tuple[str, str]]
    open: bool = False


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    missing: str
    """One line saying what would fill the section, shown when `blocks` is empty."""
    blocks: list[Plot | Table | Details] = field(default_factory=list)


@dataclass(frozen=True)
class EstimateRow:
    """One row of an estimate chart: a mean, its 95% interval when known, and the per-unit values behind it."""

    label: str
    mean: float
    low: float = NAN
    high: float = NAN
    points: list[float] = field(default_factory=list)
    baseline: bool = False


class Chart(NamedTuple):
    """An estimate chart of a run: its title (after the run's), the axis label and its rows."""

    title: str
    axis: str
    rows: list[EstimateRow]


def accuracy_row(metrics: dict[str, float], prefix: str, label: str, baseline: bool,
                 points: list[float]) -> EstimateRow:
    """A pairwise report's accuracy, as `PairwiseReport.as_metrics(prefix)` logs it."""
    return EstimateRow(label, metrics[f"{prefix}accuracy"], metrics.get(f"{prefix}accuracy_ci_low", NAN),
                       metrics.get(f"{prefix}accuracy_ci_high", NAN), points, baseline)


def children_rows(
    run: RunRecord, prefix: str, metric: str, is_baseline: Callable[[str], bool],
    points: Callable[[dict[str, float]], list[float]] = lambda metrics: [],
) -> list[EstimateRow]:
    """The estimate of each child run named `<prefix><method>` (its `<metric>`, `<metric>_low`, `<metric>_high`),
    labelled `<method>`, with the per-category values `points` picks from its metrics."""
    rows = []
    for child in run.children:
        name, metrics = child.name[len(prefix):], child.metrics
        if child.name.startswith(prefix) and metric in metrics:
            rows.append(EstimateRow(name, metrics[metric], metrics.get(f"{metric}_low", NAN),
                                    metrics.get(f"{metric}_high", NAN), points(metrics), is_baseline(name)))
    return rows


def run_title(run: RunRecord) -> str:
    return f"{run.label}{'' if run.status == 'FINISHED' else f' [{run.status}]'}"


def number(value: float) -> str:
    return f"{value:.0f}" if math.isfinite(value) and value == int(value) and abs(value) < 1e15 else f"{value:.4g}"
