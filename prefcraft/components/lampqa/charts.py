"""LaMP-QA's figures in the HTML report: an evaluate's methods, and their score per category."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefcraft.components.component import ReportCharts
from prefcraft.report_parts.blocks import Chart, children_rows

if TYPE_CHECKING:
    from prefcraft.report_parts.records import RunRecord

BASELINE = "baseline"  # results.BASELINE, without importing DSPy into the report


def comparisons(run: RunRecord) -> list[Chart]:
    if run.name != "lampqa-evaluate":
        return []
    return [Chart("answers by method", "score (mean of the category means, as the paper)", children_rows(
        run, "lampqa-", "score", lambda name: name == BASELINE))]


def spreads(run: RunRecord) -> list[Chart]:
    if run.name != "lampqa-evaluate":
        return []
    return [Chart("score per category", "mean question score", children_rows(
        run, "lampqa-", "score", lambda name: name == BASELINE,
        lambda metrics: [value for key, value in metrics.items()
                         if key.startswith("score_") and key not in ("score_low", "score_high", "score_pooled")]))]


CHARTS = ReportCharts(comparisons, spreads)
