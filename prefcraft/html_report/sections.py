"""What the report shows, as plain blocks: the runs table, what each run logged, and the cost of each command.

The results' figures come from `results.py`. A section whose data the store lacks keeps only its `missing` line.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefcraft.html_report.collect import Store, charts_of
from prefcraft.report_parts.blocks import Details, Link, Plot, Section, Table, number
from prefcraft.report_parts.plots import bar_panels
from prefcraft.report_parts.records import RunRecord

# The params that count what a command ran on, for cost per unit.
UNIT_PARAMS = {"users": "user", "instances": "instance", "questions": "question", "scenarios": "scenario"}


def runs_section(store: Store) -> Section:
    rows, failed, details = [], set(), []
    for depth, run in store.command_runs():
        if run.status != "FINISHED":
            failed.add(len(rows))
        children = [child for child in run.children if not child.is_command]
        failed_children = sum(child.status != "FINISHED" for child in children)
        name = run.name + (f" ({run.sweep_trial})" if run.sweep_trial else "")
        rows.append(("\u00a0\u00a0" * depth + ("\u21b3 " if depth else "") + name, run.component or "-",
                     run.status, run.started, duration(run.seconds), _models(run.params), _data(run.params),
                     _settings(run), f"{len(children)}" + (f" ({failed_children} not finished)" if failed_children
                                                          else "")))
        details.append(Details(f"{run.label}: {run.status}, {len(run.metrics)} metrics, {len(children)} child runs",
                               _logged(run, children), open=run.status != "FINISHED"))
    table = Table(("run", "component", "status", "started", "duration", "models", "data", "optimizer / compared",
                   "child runs"), rows, frozenset(failed))
    return Section("Runs", "Each command is one run, newest first; commands under a tour, an experiment or a sweep's "
                   "trials are indented beneath it. What each run logged, children included, is listed below the "
                   "table.",
                   "The experiment holds no runs: any prefcraft command logs one.", [table, *details] if rows else [])


def programs_section(store: Store, mlflow_ui: str) -> Section:
    """Each compiled program a run logged as an MLflow model, linked to its page in the MLflow UI at `mlflow_ui`."""
    ui = mlflow_ui.rstrip("/")
    rows = []
    for _, command in store.command_runs():
        for run in [command, *(child for child in command.children if not child.is_command)]:
            if (program := run.program) is None:
                continue
            logged = Link(program.model_id, f"{ui}/#/experiments/{store.experiment_id}/models/{program.model_id}")
            version = (Link(f"{program.registered_name} v{program.version}",
                            f"{ui}/#/models/{program.registered_name}/versions/{program.version}")
                       if program.registered_name else "not promoted: it lost the ship gate")
            rows.append((command.label, run.name if run is not command else "-", logged, version))
    return Section("Compiled programs", "The program each compile or fit logged as an MLflow model; a winner of the "
                   "ship gate (and every fitted judge) is a version of a registered model, the alias `champion` on "
                   f"the newest. Links open the MLflow UI at {ui} (`mlflow ui --backend-store-uri {store.uri}`).",
                   "No run logged a compiled program: a compile or a SynthesizeMe fit does.",
                   [Table(("command", "run", "logged model", "registered version"), rows)] if rows else [])


def cost_section(store: Store) -> Section:
    rows, panels = [], {"LM calls": {}, "tokens (prompt + completion)": {}, "wall seconds": {}}
    for _, run in store.command_runs():
        usage, source = lm_usage(run)
        if usage is None:
            continue
        calls, prompt, completion = usage
        seconds = run.seconds
        unit, count = _units(run.params)
        per_unit = ["-", "-", "-"]
        if count:
            label = f"{run.label} per {unit}"
            panels["LM calls"][label] = calls / count
            panels["tokens (prompt + completion)"][label] = (prompt + completion) / count
            per_unit = [f"{calls / count:.1f}", f"{(prompt + completion) / count:.0f}", "-"]
            if seconds is not None:
                panels["wall seconds"][label] = seconds / count
                per_unit[2] = f"{seconds / count:.1f}"
        rows.append((run.label, run.status, f"{calls:.0f}", f"{prompt:.0f}", f"{completion:.0f}", duration(seconds),
                     f"{count} {unit}s" if count else "-", *per_unit, source))
    if not rows:
        return Section("Cost", "", "No run logged LM usage (`lm_calls`, `prompt_tokens`, `completion_tokens`): any "
                       "command that calls a model fills this.")
    table = Table(("run", "status", "LM calls", "prompt tokens", "completion tokens", "wall time", "units",
                   "calls / unit", "tokens / unit", "seconds / unit", "logged by"), rows)
    blocks: list[Plot | Table | Details] = [table]
    panels = {name: values for name, values in panels.items() if values}
    if panels:
        png = bar_panels(panels, title="cost per user, instance, question or scenario")
        blocks.insert(0, Plot("Cost per unit", png, "Per unit of the run's data, all methods or conditions "
                              "together. Wall time is the run's own duration."))
    return Section("Cost", "LM calls are server requests (DSPy's cache hits cost none); tokens as the server counted "
                   "them. A run that logged no usage of its own is summed over the child runs named under "
                   "'logged by'.", "", blocks)


def lm_usage(run: RunRecord) -> tuple[tuple[float, float, float] | None, str]:
    """(calls, prompt tokens, completion tokens) the run logged, or its child runs when it logged none itself, and
    which runs logged them: a compile whose optimizer's calls went unlogged shows only its validation runs' calls."""
    own = _usage(run.metrics)
    if own is not None:
        return own, "the run"
    found = {child.name: usage for child in run.children
             if not child.is_command and (usage := lm_usage(child)[0]) is not None}
    if not found:
        return None, ""
    names = ", ".join(found) if len(found) <= 3 else f"{len(found)} child runs"
    return tuple(sum(values) for values in zip(*found.values(), strict=True)), names


def _usage(metrics: dict[str, float]) -> tuple[float, float, float] | None:
    """A total (`lm_calls`) wins over the per-step figures it sums (`<step>_lm_calls`)."""
    prefixes = [""] if "lm_calls" in metrics else [key[: -len("lm_calls")] for key in metrics
                                                      if key.endswith("_lm_calls")]
    if not prefixes:
        return None
    return (sum(metrics[f"{p}lm_calls"] for p in prefixes), sum(metrics.get(f"{p}prompt_tokens", 0) for p in prefixes),
            sum(metrics.get(f"{p}completion_tokens", 0) for p in prefixes))


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def _logged(run: RunRecord, children: list[RunRecord]) -> list[tuple[str, str]]:
    rows = [(name, number(value)) for name, value in sorted(run.metrics.items())]
    for child in children:
        name = child.name if child.status == "FINISHED" else f"{child.name} ({child.status})"
        logged = [(f"{name}: {metric}", number(value)) for metric, value in sorted(child.metrics.items())]
        rows += logged or [(name, "no metrics")]
    return rows or [("(nothing)", "no metrics and no child runs")]


def _models(params: dict[str, str]) -> str:
    task = params.get("task_model", "")
    others = [f"{role} {params[f'{role}_model']}" for role in ("prompt", "judge")
              if params.get(f"{role}_model") not in (None, task)]
    return "; ".join([task, *others]) if task else "-"


def _data(params: dict[str, str]) -> str:
    if "data" not in params:
        return "-"
    text = Path(params["data"]).name
    if "split" in params:
        text += f" ({params['split']})"
    unit, count = _units(params)
    return f"{text}, {count} {unit}s" if count else text


def _settings(run: RunRecord) -> str:
    params = run.params
    if run.component == "sweep":
        return (f"{params.get('component')} {params.get('step')}, {params.get('n_trials')} trials over "
                f"{_listed(params.get('search', '-'))}")
    if "num_trials" in params:
        return f"{params.get('name', '?')}: {params.get('num_candidates')} candidates, {params['num_trials']} trials"
    if component_settings := charts_of(run).settings(run):
        return component_settings
    for key in ("methods", "inferrers", "components", "steps"):
        if key in params:
            return _listed(params[key])
    return ", ".join(child.name for child in run.children if "condition" in child.params) or "-"


def _listed(value: str) -> str:
    """A list param: `evaluate` joins it with commas, `tracked_run` writes other lists (and a dict, listed by its keys)
    as JSON."""
    try:
        items = json.loads(value)
    except json.JSONDecodeError:
        return value.replace(",", ", ")
    return ", ".join(map(str, items)) if isinstance(items, list | dict) else value


def _units(params: dict[str, str]) -> tuple[str, int]:
    for key, unit in UNIT_PARAMS.items():
        if params.get(key, "").isdigit():
            return unit, int(params[key])
    return "", 0
