"""CUPID's figures in the HTML report: an evaluate's inferrers and responders, and their F1 and response scores per
instance type."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from prefcraft.components.component import ReportCharts
from prefcraft.components.cupid.data import INSTANCE_TYPES
from prefcraft.report_parts.blocks import Chart, children_rows

if TYPE_CHECKING:
    from prefcraft.report_parts.records import RunRecord


def _is_baseline(method: str) -> bool:
    """The response method with no user context; a run recorded before its rename named it "none"."""
    return method in ("baseline", "none")


def comparisons(run: RunRecord) -> list[Chart]:
    if run.name != "cupid-evaluate":
        return []
    return [Chart("preference inference", "F1 of the inferred preference", children_rows(
                run, "infer-", "f1", lambda name: "compiled" not in name)),
            Chart("responses", "judge score of the response (1-10)", children_rows(
                run, "respond-", "score", _is_baseline))]


def spreads(run: RunRecord) -> list[Chart]:
    if run.name != "cupid-evaluate":
        return []
    return [Chart("F1 per instance type", "F1 of the inferred preference", children_rows(
                run, "infer-", "f1", lambda name: "compiled" not in name, _per_type("f1"))),
            Chart("response score per instance type", "judge score of the response (1-10)", children_rows(
                run, "respond-", "score", _is_baseline, _per_type("score")))]


def _per_type(metric: str) -> Callable[[dict[str, float]], list[float]]:
    """A child run's `metric` for each instance type it has, as the points of its row."""
    return lambda metrics: [metrics[f"{kind}_{metric}"] for kind in INSTANCE_TYPES if f"{kind}_{metric}" in metrics]


CHARTS = ReportCharts(comparisons, spreads)
