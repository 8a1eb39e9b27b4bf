"""One runner for every step: `prefcraft <component> <step>`, `prefcraft.run`, experiments, sweeps and the tour all
come here. It reads the step's data (its `load`), opens the model session (servers started and stopped, faults
watched) and the MLflow run the step declares (its name and params), runs the step's work, and prints its report; the
step provides the work, which records its metrics, child runs and result files in that run through `StepRun.tracker`."""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack, nullcontext
from functools import partial
from typing import Any

from prefcraft.components.component import Component, Emit, StepRun
from prefcraft.console import echo
from prefcraft.engine.session import model_session
from prefcraft.options import Options
from prefcraft.registry import COMPONENTS
from prefcraft.settings import Settings
from prefcraft.tracking.runs import NOT_TRACKED, StepTracker, Tracker, start_tracking


def run_step(component: str, step: str, options: Options, settings: Settings, emit: Emit = echo) -> Any:
    """Runs `prefcraft <component> <step>` with its options; returns the step's outcome."""
    chosen = COMPONENTS[component].steps[step]
    loaded = chosen.load(options)
    with ExitStack() as stack:
        session = stack.enter_context(model_session(settings)) if chosen.models else settings
        tracker = start_tracking(session) if chosen.tracked else NOT_TRACKED
        opener = partial(open_step_run, COMPONENTS[component], tracker)
        run = StepRun(settings, session, StepTracker(tracker), emit, loaded, opener)
        with opener(step, options, run):
            outcome = chosen.work(options, run)
    emit(chosen.report(outcome))
    return outcome


def open_step_run(component: Component, tracker: Tracker, step: str, options: Any,
                  run: StepRun) -> AbstractContextManager[Any]:
    """The run `step` declares (`Step.run_name`), its params from the step's options and `run`; none where it
    declares none."""
    chosen = component.steps[step]
    return tracker.run(chosen.run_name, chosen.params(options, run)) if chosen.run_name else nullcontext()
