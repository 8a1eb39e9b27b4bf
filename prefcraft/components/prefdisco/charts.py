"""PrefDisco's section of the HTML report: an evaluate's PrefAlign and NormAlign per task and condition, as a table
and as bars."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from prefcraft.components.component import ReportCharts, ReportSection
from prefcraft.report_parts.blocks import NAN, Plot, Table, number, run_title

if TYPE_CHECKING:
    from prefcraft.report_parts.records import RunRecord

# The paper's NormAlign (of the conditions' means, per task) first, the per-scenario form beside it.
METRICS = ("pref_align", "accuracy", "questions", "failures", "missing_grades", "norm_align",
           "norm_align_negative_tasks", "norm_align_per_scenario", "norm_align_negative_share", "norm_align_undefined")


def per_task(run: RunRecord) -> list[Plot | Table]:
    if run.name != "prefdisco-evaluate":
        return []
    by_task = _figures(run)
    if not by_task:
        return []
    from prefcraft.report_parts.plots import grouped_bars  # matplotlib, only when a report is drawn

    title = run_title(run)
    rows = [(task, condition, *(_cell(name, values.get(name, NAN)) for name in METRICS))
            for task, conditions in by_task.items() for condition, values in conditions.items()]
    blocks: list[Plot | Table] = [Table(
        ("task", "condition", "PrefAlign (1-5)", "accuracy", "questions", "failed", "missing grades",
         "NormAlign (paper: of means)", "tasks with NormAlign < 0", "per-scenario NormAlign",
         "scenarios with NormAlign < 0", "NormAlign undefined"), rows, title=title)]
    pref_align = {task: {c: v["pref_align"] for c, v in conds.items() if "pref_align" in v}
                  for task, conds in by_task.items()}
    blocks.append(Plot(f"{title}: PrefAlign", grouped_bars(pref_align, title=f"{title}: PrefAlign",
                                                           ylabel="PrefAlign (1-5)")))
    norm_align = {task: {c: 100 * v["norm_align"] for c, v in conds.items() if "norm_align" in v}
                  for task, conds in by_task.items()}
    if any(norm_align.values()):
        blocks.append(Plot(f"{title}: NormAlign", grouped_bars(
            norm_align, title=f"{title}: NormAlign", ylabel="NormAlign (0 = baseline, 100 = oracle)")))
    return blocks


def _figures(run: RunRecord) -> dict[str, dict[str, dict[str, float]]]:
    """task -> condition -> figure, from metrics named `<task>_<condition>_<figure>`; the conditions are the names
    of the run's children (one per condition)."""
    conditions = sorted((child.name for child in run.children), key=len, reverse=True)
    pattern = re.compile(rf"(.+?)_({'|'.join(map(re.escape, conditions))})_({'|'.join(METRICS)})")
    found: dict[str, dict[str, dict[str, float]]] = {}
    for key, value in run.metrics.items():
        if conditions and (match := pattern.fullmatch(key)):
            task, condition, name = match.groups()
            found.setdefault(task, {}).setdefault(condition, {})[name] = value
    order = {child.name: index for index, child in enumerate(run.children)}
    return {task: dict(sorted(found[task].items(), key=lambda item: order[item[0]]))
            for task in sorted(found, key=lambda task: (task == "all", task))}


def _cell(name: str, value: float) -> str:
    if math.isnan(value):
        return "-"
    if name in ("norm_align", "norm_align_per_scenario"):
        return f"{100 * value:.0f}"
    if name in ("accuracy", "norm_align_negative_share"):
        return f"{100 * value:.0f}%"
    counts = ("failures", "missing_grades", "norm_align_negative_tasks", "norm_align_undefined")
    return number(value) if name in counts else f"{value:.2f}"


CHARTS = ReportCharts(sections=(ReportSection(
    "PrefDisco: PrefAlign and NormAlign per task", "PrefAlign = Σ weight x grade / Σ weight (a missing grade counts "
    "as 1). NormAlign = 100 x (discovery - baseline) / (oracle - baseline): the paper's Table 2 form on the "
    "conditions' mean PrefAlign per task (drawn), and beside it the mean of per-scenario values, undefined where "
    "oracle = baseline.", "No prefdisco-evaluate run: `prefcraft prefdisco evaluate` (or `demo`) fills this table.",
    per_task),))
