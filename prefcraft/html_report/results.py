"""The results' sections: sweeps, optimizer trajectories, baseline against personalized, spread over units, PrefDisco.

Each reads the metrics the commands log (names as in their `log_metrics` calls) and draws only what a run holds.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

from prefcraft.components.cupid.data import INSTANCE_TYPES
from prefcraft.html_report.collect import RunRecord, Store, number, param
from prefcraft.html_report.plots import EstimateRow, estimate_chart, grouped_bars, line_chart
from prefcraft.html_report.sections import Plot, Section, Table
from prefcraft.metrics.stats import bootstrap_mean

NAN = math.nan
# The paper's NormAlign (of the conditions' means, per task) first, the per-scenario form beside it.
PREFDISCO_METRICS = ("pref_align", "accuracy", "questions", "failures", "missing_grades", "norm_align",
                     "norm_align_negative_tasks", "norm_align_per_scenario", "norm_align_negative_share",
                     "norm_align_undefined")
# What a sweep's trial logs (prefcraft/sweeps.py), as the table's columns.
TRIAL_METRICS = {"score": "score", "uncompiled_score": "uncompiled", "gain": "gain", "lm_calls": "LM calls",
                 "seconds": "seconds"}
# Figures of a comparison or a spread: (title, axis label, rows).
Chart = tuple[str, str, list[EstimateRow]]


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
        tables.append(Table(header, rows, failed, f"{_title(run)}: {len(rows)} trials{shown}"))
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
        png = line_chart(series, title=_title(run), xlabel="evaluation, in the order logged", ylabel="score (%)",
                         levels=levels)
        plots.append(Plot(_title(run), png, "DSPy's Evaluate score of each program the optimizer scored: eval_full "
                          "on the whole validation set (MIPROv2; its first is the uncompiled program), eval_minibatch "
                          "on a trial's minibatch, eval for the other optimizers. Dashed: the validation scores the "
                          "ship-only-a-winner gate compared."))
    return Section("Optimizer trajectories", "Score per trial or candidate, as DSPy's autologging recorded it on each "
                   "compile's run.", "No compile logged optimizer evaluations: `prefcraft cupid|lampqa|prefdisco "
                   "compile` or `compile-persona` fill this.", plots)


def comparisons_section(store: Store) -> Section:
    plots = _chart_plots(store, _comparisons)
    return Section("Baseline against personalized", "Grey: the baseline (no user context, or the uncompiled program); "
                   "blue: the methods that personalize. Whiskers: the 95% bootstrap interval the command logged.",
                   "No evaluate or compile run logged a comparison: `prefcraft evaluate --methods default "
                   "synthesizeme`, `cupid|lampqa|prefdisco evaluate`, `sensejudge evaluate` or any compile fill this.",
                   plots)


def spreads_section(store: Store) -> Section:
    plots = _chart_plots(store, lambda run: [chart for chart in _spreads(run) if any(row.points for row in chart[2])],
                         "Dots: one per user, instance type or category; diamond and whiskers: the estimate and its "
                         "95% interval.")
    return Section("Spread over users and categories", "The per-user (or per-category) values behind each estimate.",
                   "No run logged per-user or per-category figures: `prefcraft evaluate` or `fit` (a child run per "
                   "user), `cupid evaluate` (per instance type) or `lampqa evaluate` (per category) fill this.", plots)


def prefdisco_section(store: Store) -> Section:
    blocks: list[Plot | Table] = []
    for _, run in store.command_runs():
        if run.name != "prefdisco-evaluate":
            continue
        by_task = _prefdisco_figures(run)
        if not by_task:
            continue
        rows = [(task, condition, *(_prefdisco_cell(name, values.get(name, NAN)) for name in PREFDISCO_METRICS))
                for task, conditions in by_task.items() for condition, values in conditions.items()]
        blocks.append(Table(("task", "condition", "PrefAlign (1-5)", "accuracy", "questions", "failed",
                             "missing grades", "NormAlign (paper: of means)", "tasks with NormAlign < 0",
                             "per-scenario NormAlign", "scenarios with NormAlign < 0", "NormAlign undefined"), rows,
                            title=_title(run)))
        pref_align = {task: {c: v["pref_align"] for c, v in conds.items() if "pref_align" in v}
                      for task, conds in by_task.items()}
        blocks.append(Plot(f"{_title(run)}: PrefAlign", grouped_bars(pref_align, title=f"{_title(run)}: PrefAlign",
                                                                      ylabel="PrefAlign (1-5)")))
        norm_align = {task: {c: 100 * v["norm_align"] for c, v in conds.items() if "norm_align" in v}
                      for task, conds in by_task.items()}
        if any(norm_align.values()):
            blocks.append(Plot(f"{_title(run)}: NormAlign", grouped_bars(
                norm_align, title=f"{_title(run)}: NormAlign", ylabel="NormAlign (0 = baseline, 100 = oracle)")))
    return Section("PrefDisco: PrefAlign and NormAlign per task", "PrefAlign = Σ weight x grade / Σ weight (a missing "
                   "grade counts as 1). NormAlign = 100 x (discovery - baseline) / (oracle - baseline): the paper's "
                   "Table 2 form on the conditions' mean PrefAlign per task (drawn), and beside it the mean of "
                   "per-scenario values, undefined where oracle = baseline.", "No prefdisco-evaluate run: `prefcraft "
                   "prefdisco evaluate` (or `demo`) fills this table.", blocks)


def _chart_plots(store: Store, charts: Callable[[RunRecord], list[Chart]], caption: str = "") -> list[Plot]:
    """An estimate chart per (run, chart) that has rows."""
    plots = []
    for _, run in store.command_runs():
        for title, axis, rows in charts(run):
            if rows:
                heading = f"{_title(run)}: {title}"
                plots.append(Plot(heading, estimate_chart(rows, title=heading, axis=axis), caption))
    return plots


def _comparisons(run: RunRecord) -> list[Chart]:
    metrics = run.metrics
    if run.name == "evaluate":
        return [("accuracy by method", "accuracy over both orders", _method_rows(run, []))]
    if "val_uncompiled" in metrics and "val_compiled" in metrics:
        verdict = "won" if metrics.get("won") else "did not win: not shipped"
        return [(f"validation score ({verdict})", "validation score (the compile's metric)", [
            EstimateRow("uncompiled", metrics["val_uncompiled"], baseline=True),
            EstimateRow("compiled", metrics["val_compiled"])])]
    if run.name == "cupid-evaluate":
        return [("preference inference", "F1 of the inferred preference", _children_rows(
                    run, "infer-", "f1", lambda name: "compiled" not in name)),
                ("responses", "judge score of the response (1-10)", _children_rows(
                    run, "respond-", "score", lambda name: name == "none"))]
    if run.name == "lampqa-evaluate":
        return [("answers by method", "score (mean of the category means, as the paper)", _children_rows(
            run, "lampqa-", "score", lambda name: name == "none"))]
    if run.name == "sensejudge-evaluate":
        from prefcraft.components.sensejudge.steps import description_names

        count = sum(bool(re.fullmatch(r"description_\d+_accuracy", key)) for key in metrics)
        prefixes = [f"description_{index}_" for index in range(count)] + ["selected_"]
        names = [*description_names(count), "selected subset"]
        return [("judge accuracy by description", "accuracy over both orders", [
            _accuracy_row(metrics, prefix, name, name == "no description", [])
            for prefix, name in zip(prefixes, names, strict=True) if f"{prefix}accuracy" in metrics])]
    return []


def _spreads(run: RunRecord) -> list[Chart]:
    units = [child for child in run.children if not child.is_command]
    if run.name == "evaluate":
        return [("per-user accuracy", "accuracy over both orders", _method_rows(run, units))]
    if run.name == "fit-synthesizeme":
        points = [unit.metrics["val_accuracy"] for unit in units if "val_accuracy" in unit.metrics]
        estimate = bootstrap_mean(points)
        return [("validation accuracy per fitted user", "validation accuracy (interval: bootstrap over users)",
                 [EstimateRow("synthesizeme", estimate.mean, estimate.low, estimate.high, points)])] if points else []
    if run.name == "cupid-evaluate":
        return [("F1 per instance type", "F1 of the inferred preference", _children_rows(
            run, "infer-", "f1", lambda name: "compiled" not in name,
            lambda metrics: [metrics[f"{kind}_f1"] for kind in INSTANCE_TYPES if f"{kind}_f1" in metrics]))]
    if run.name == "lampqa-evaluate":
        return [("score per category", "mean question score", _children_rows(
            run, "lampqa-", "score", lambda name: name == "none",
            lambda metrics: [value for key, value in metrics.items()
                             if key.startswith("score_") and key not in ("score_low", "score_high", "score_pooled")]))]
    return []


def _method_rows(run: RunRecord, users: list[RunRecord]) -> list[EstimateRow]:
    """`evaluate`'s accuracy per method, with each user's (from the per-user child runs) when `users` are given."""
    rows = []
    for method in run.params.get("methods", "").split(","):
        key = f"{method}_accuracy"
        if key in run.metrics:
            points = [user.metrics[key] for user in users if key in user.metrics]
            rows.append(_accuracy_row(run.metrics, f"{method}_", method, method == "default", points))
    return rows


def _accuracy_row(metrics: dict[str, float], prefix: str, label: str, baseline: bool,
                  points: list[float]) -> EstimateRow:
    """A pairwise report's accuracy, as `PairwiseReport.as_metrics(prefix)` logs it."""
    return EstimateRow(label, metrics[f"{prefix}accuracy"], metrics.get(f"{prefix}accuracy_ci_low", NAN),
                       metrics.get(f"{prefix}accuracy_ci_high", NAN), points, baseline)


def _children_rows(
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


def _prefdisco_figures(run: RunRecord) -> dict[str, dict[str, dict[str, float]]]:
    """task -> condition -> figure, from metrics named `<task>_<condition>_<figure>`; the conditions are the names
    of the run's children (one per condition)."""
    conditions = sorted((child.name for child in run.children), key=len, reverse=True)
    pattern = re.compile(rf"(.+?)_({'|'.join(map(re.escape, conditions))})_({'|'.join(PREFDISCO_METRICS)})")
    found: dict[str, dict[str, dict[str, float]]] = {}
    for key, value in run.metrics.items():
        if conditions and (match := pattern.fullmatch(key)):
            task, condition, name = match.groups()
            found.setdefault(task, {}).setdefault(condition, {})[name] = value
    order = {child.name: index for index, child in enumerate(run.children)}
    return {task: dict(sorted(found[task].items(), key=lambda item: order[item[0]]))
            for task in sorted(found, key=lambda task: (task == "all", task))}


def _prefdisco_cell(name: str, value: float) -> str:
    if math.isnan(value):
        return "-"
    if name in ("norm_align", "norm_align_per_scenario"):
        return f"{100 * value:.0f}"
    if name in ("accuracy", "norm_align_negative_share"):
        return f"{100 * value:.0f}%"
    counts = ("failures", "missing_grades", "norm_align_negative_tasks", "norm_align_undefined")
    return number(value) if name in counts else f"{value:.2f}"


def _along_steps(points: list[tuple[int, float]]) -> list[tuple[float, float]]:
    """On its logged steps when they differ (MIPROv2's eval_full), else in logging order (GEPA's eval, all step 0)."""
    steps = [step for step, _ in points]
    xs = steps if len(set(steps)) == len(steps) else range(len(points))
    return [(x, value) for x, (_, value) in zip(xs, points, strict=True)]


def _title(run: RunRecord) -> str:
    return f"{run.label}{'' if run.status == 'FINISHED' else f' [{run.status}]'}"
