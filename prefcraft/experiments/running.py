"""`prefcraft experiment run FILE`: an experiment's steps, in order, under one MLflow parent run `experiment:<name>`.

Each step is its command run through `prefcraft.runner.run_step` (no second copy of any pipeline) on the
experiment's settings, with its own model session; the step's runs nest under the parent. A step that fails stops the
experiment and the parent run ends FAILED, with what the earlier steps logged. A re-run whose inputs are unchanged is
answered from DSPy's cache: it makes no LM calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefcraft.engine.usage import LMUsage, metered
from prefcraft.executors import Executor
from prefcraft.experiments.files import Experiment, with_executor
from prefcraft.runner import run_step
from prefcraft.settings import Settings
from prefcraft.tracking.runs import data_digest, log_json, model_params, start_tracking


def run_experiment(path: Path, experiment: Experiment, settings: Settings, emit: Callable[[str], None], *,
                   executor: Executor | None = None, address: str | None = None,
                   workers: int | None = None) -> list[Any]:
    """Runs the steps; returns each step's outcome, in order. Logs the file, each step's full options (the defaults
    included), and per step and in all the LM calls, tokens and seconds. `executor`, `address` and
    `workers`, when given, go to the steps that take them (`with_executor`)."""

    steps = with_executor(experiment.commands(), executor, address, workers)
    params = {"experiment": experiment.name, "description": experiment.description,
              "component": experiment.component, "steps": [step.name for step in steps], "config": str(path),
              "config_digest": data_digest(path), **model_params(settings)}
    tracker = start_tracking(settings)
    with tracker.run(f"experiment:{experiment.name}", params):
        tracker.log_file(path)
        log_json(tracker, {step.name: {"command": step.component, "step": step.name, **step.options.model_dump()}
                           for step in steps}, "steps.json")
        outcomes, total, started = [], LMUsage(), time.perf_counter()
        for number, step in enumerate(steps, start=1):
            emit(f"\n=== {experiment.name}, step {number}/{len(steps)}: {step}")
            step_started = time.perf_counter()
            with metered() as meter:
                outcomes.append(run_step(step.component, step.name, step.options, settings))
            seconds = time.perf_counter() - step_started
            key = step.name.replace("-", "_")
            tracker.log_metrics({**meter.usage.as_metrics(f"{key}_"), f"{key}_seconds": seconds})
            emit(f"=== {experiment.name}, step {number}/{len(steps)} done: {meter.usage.calls} LM calls, "
                 f"{seconds:.1f} s")
            total += meter.usage
        tracker.log_metrics({**total.as_metrics(), "seconds": time.perf_counter() - started})
    return outcomes
