"""SenseJudge's figure in the HTML report: an evaluate's judge accuracy per description and for the selected subset."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from prefcraft.components.component import ReportCharts
from prefcraft.components.sensejudge.selection import description_names
from prefcraft.report_parts.blocks import Chart, accuracy_row

if TYPE_CHECKING:
    from prefcraft.report_parts.records import RunRecord


def comparisons(run: RunRecord) -> list[Chart]:
    if run.name != "sensejudge-evaluate":
        return []
    metrics = run.metrics
    count = sum(bool(re.fullmatch(r"description_\d+_accuracy", key)) for key in metrics)
    prefixes = [f"description_{index}_" for index in range(count)] + ["selected_"]
    names = [*description_names(count), "selected subset"]
    return [Chart("judge accuracy by description", "accuracy over both orders", [
        accuracy_row(metrics, prefix, name, name == "no description", [])
        for prefix, name in zip(prefixes, names, strict=True) if f"{prefix}accuracy" in metrics])]


CHARTS = ReportCharts(comparisons)
