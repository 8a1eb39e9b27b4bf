"""SynthesizeMe's figures and settings in the HTML report: an evaluate's methods, overall and per user, a fit's
validation accuracy per user, and a fit's search."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefcraft.components.component import ReportCharts
from prefcraft.metrics.stats import bootstrap_mean
from prefcraft.report_parts.blocks import Chart, EstimateRow, accuracy_row

if TYPE_CHECKING:
    from prefcraft.report_parts.records import RunRecord


def comparisons(run: RunRecord) -> list[Chart]:
    if run.name != "evaluate":
        return []
    return [Chart("accuracy by method", "accuracy over both orders", _method_rows(run, []))]


def spreads(run: RunRecord) -> list[Chart]:
    users = [child for child in run.children if not child.is_command]
    if run.name == "evaluate":
        return [Chart("per-user accuracy", "accuracy over both orders", _method_rows(run, users))]
    if run.name == "fit-synthesizeme":
        points = [user.metrics["val_accuracy"] for user in users if "val_accuracy" in user.metrics]
        if not points:
            return []
        estimate = bootstrap_mean(points)
        return [Chart("validation accuracy per fitted user", "validation accuracy (interval: bootstrap over users)",
                      [EstimateRow("synthesizeme", estimate.mean, estimate.low, estimate.high, points)])]
    return []


def settings(run: RunRecord) -> str:
    params = run.params
    if "search" not in params:
        return ""
    return (f"SynthesizeMe, {params['search']} search (n={params.get('num_persona_subsets')}, "
            f"m={params.get('num_demo_candidates')})")


def _method_rows(run: RunRecord, users: list[RunRecord]) -> list[EstimateRow]:
    """`evaluate`'s accuracy per method, with each user's (from the per-user child runs) when `users` are given."""
    rows = []
    for method in run.params.get("methods", "").split(","):
        key = f"{method}_accuracy"
        if key in run.metrics:
            points = [user.metrics[key] for user in users if key in user.metrics]
            rows.append(accuracy_row(run.metrics, f"{method}_", method, method == "baseline", points))
    return rows


CHARTS = ReportCharts(comparisons, spreads, settings)
