"""The results' sections: sweeps, optimizer trajectories, baseline against personalized, spread over units, and
the sections a component fills alone.

Each reads the metrics the commands log (names as in their `log_metrics` calls) and draws only what a run holds; a
run's component adds its own charts through its report hooks (`Component.charts`).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from prefcraft.html_report.collect import Store, charts_of, param
from prefcraft.registry import COMPONENTS
from prefcraft.report_parts.blocks import Chart, Details, EstimateRow, Plot, Section, Table, number, run_title
from prefcraft.report_parts.plots import estimate_chart, line_chart
from prefcraft.report_parts.records import RunRecord

# What a sweep's trial logs (prefcraft/experiments/sweeps.py), as the table's columns.
TRIAL_METRICS = {"score": "score", "uncompiled_score": "uncompiled", "gain": "gain", "lm_calls": "LM calls",
                 "seconds": "seconds"}
# The compile steps, whose runs DSPy's autologging fills with optimizer evaluations.
COMPILE_STEPS = ", ".join(f"`prefcraft {component.name} {step}`" for component in COMPONENTS.values()
                          for step in component.steps if "compile" in step.split("-"))


def sweeps_section(store: Store) -> Section:
    tables = []
    for _, run in store.command_runs():
        if not run.trials:
            continue
        goals = {objective: goal for goal, objective in map(str.split, json.loads(run.params.get("directions", "[]")))}
        names = list(dict.fromkeys(key for trial in run.trials for key in trial.params if key != "trial"))
        front = None if run.pareto is None else list(map(str, run.pareto))
        mark = "front not logged" if front is None else "Pareto front" if len(goals) > 1 else "best"
        header = ("trial", *names, *(f"{label} ({goals[key]})" if key in goals else label
                                     for key, label in TRIAL_METRICS.items()), "status", mark)
        rows = [(trial.params.get("trial", trial.name), *(param(trial.params.get(name, "-")) for name in names),
                 *(number(trial.metrics[key]) if key in trial.metrics else "-" for key in TRIAL_METRICS),
                 trial.status, "-" if front is None else "*" if trial.params.get("trial") in front else "")
                for trial in run.trials]
        failed = frozenset(index for index, trial in enumerate(run.trials) if trial.status != "FINISHED")
        shown = "" if front is None else f"; {mark} of the study: trials {', '.join(front) or 'none'}"
        tables.append(Table(header, rows, failed, f"{run_title(run)}: {len(rows)} trials{shown}"))
    return Section("Sweeps", "One row per trial of each `prefcraft sweep run`: the values it tried and what its "
                   "compile scored and cost. * marks the study's Pareto front (its best trial, for one objective) as "
                   "the sweep's pareto.json lists it; the caption names the whole front, earlier runs' trials "
                   "included. Each trial's compile is drawn with the other compiles, labelled with its sweep, trial "
                   "and values.", "No sweep: `prefcraft sweep run SWEEP.toml` fills this.", tables)


def trajectories_section(store: Store) -> Section:
    plots = []
    for _, run in store.command_runs():
        if not run.histories:
            continue
        series = {key: _along_steps(points) for key, points in run.histories.items()}
        levels = {f"{name} on val": 100 * run.metrics[f"val_{name}"] for name in ("uncompiled", "compiled")
                  if f"val_{name}" in run.metrics}
        png = line_chart(series, title=run_title(run), xlabel="evaluation, in the order logged", ylabel="score (%)",
                         levels=levels)
        plots.append(Plot(run_title(run), png, "DSPy's Evaluate score of each program the optimizer scored: eval_full "
                          "on the whole validation set (MIPROv2; its first is the uncompiled program), eval_minibatch "
                          "on a trial's minibatch, eval for the other optimizers. Dashed: the validation scores the "
                          "ship-only-a-winner gate compared."))
    return Section("Optimizer trajectories", "Score per trial or candidate, as DSPy's autologging recorded it on each "
                   "compile's run.", f"No compile logged optimizer evaluations: a compile step ({COMPILE_STEPS}) "
                   "fills this.", plots)


def comparisons_section(store: Store) -> Section:
    plots = _chart_plots(store, _comparisons)
    return Section("Baseline against personalized", "Grey: the baseline (no user context, or the uncompiled program); "
                   "blue: the methods that personalize. Whiskers: the 95% bootstrap interval the command logged.",
                   "No evaluate or compile run logged a comparison: a component's evaluate step (`prefcraft "
                   "<component> evaluate`) or any compile fills this.", plots)


def spreads_section(store: Store) -> Section:
    plots = _chart_plots(store, lambda run: [chart for chart in charts_of(run).spreads(run)
                                             if any(row.points for row in chart.rows)],
                         "Dots: one per user, instance type or category; diamond and whiskers: the estimate and its "
                         "95% interval.")
    return Section("Spread over users and categories", "The per-user (or per-category) values behind each estimate.",
                   "No run logged per-user or per-category figures: an evaluate or fit step that logs a child run "
                   "per user, or figures per instance type or category, fills this.", plots)


def component_sections(store: Store) -> list[Section]:
    """The sections a component fills alone (`ReportCharts.sections`), in the registry's order."""
    sections = []
    for component in COMPONENTS.values():
        for section in component.charts.sections:
            blocks: list[Plot | Table | Details] = [block for _, run in store.command_runs()
                                                    if run.name in component.run_names for block in section.blocks(run)]
            sections.append(Section(section.title, section.intro, section.missing, blocks))
    return sections


def _chart_plots(store: Store, charts: Callable[[RunRecord], list[Chart]], caption: str = "") -> list[Plot]:
    """An estimate chart per (run, chart) that has rows."""
    plots = []
    for _, run in store.command_runs():
        for title, axis, rows in charts(run):
            if rows:
                heading = f"{run_title(run)}: {title}"
                plots.append(Plot(heading, estimate_chart(rows, title=heading, axis=axis), caption))
    return plots


def _comparisons(run: RunRecord) -> list[Chart]:
    return [*_compile_verdict(run.metrics), *charts_of(run).comparisons(run)]


def _compile_verdict(metrics: dict[str, float]) -> list[Chart]:
    """A compile's uncompiled and compiled programs on validation, as the ship-only-a-winner gate compared them."""
    if "val_uncompiled" not in metrics or "val_compiled" not in metrics:
        return []
    verdict = "won" if metrics.get("won") else "did not win: not shipped"
    return [Chart(f"validation score ({verdict})", "validation score (the compile's metric)", [
        EstimateRow("uncompiled", metrics["val_uncompiled"], baseline=True),
        EstimateRow("compiled", metrics["val_compiled"])])]


def _along_steps(points: list[tuple[int, float]]) -> list[tuple[float, float]]:
    """On its logged steps when they differ (MIPROv2's eval_full), else in logging order (GEPA's eval, all step 0)."""
    steps = [step for step, _ in points]
    xs = steps if len(set(steps)) == len(steps) else range(len(points))
    return [(x, value) for x, (_, value) in zip(xs, points, strict=True)]
