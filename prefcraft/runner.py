"""One runner for every step: `prefcraft <component> <step>`, `prefcraft.run`, experiments, sweeps and the tour all
come here. It reads the step's data (its `load`), opens the model session (servers started and stopped, faults
watched) and the MLflow tracking, runs the step's work, and prints its report; the step provides only the work."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from prefcraft.components.component import Emit, StepRun
from prefcraft.console import echo
from prefcraft.options import Options
from prefcraft.registry import COMPONENTS
from prefcraft.runtime import model_session
from prefcraft.settings import Settings
from prefcraft.tracking import NOT_TRACKED, start_tracking


def run_step(component: str, step: str, options: Options, settings: Settings, emit: Emit = echo) -> Any:
    """Runs `prefcraft <component> <step>` with its options; returns the step's outcome."""
    chosen = COMPONENTS[component].steps[step]
    loaded = chosen.load(options)
    with ExitStack() as stack:
        session = stack.enter_context(model_session(settings)) if chosen.models else settings
        tracker = start_tracking(session) if chosen.tracked else NOT_TRACKED
        outcome = chosen.work(options, StepRun(settings, session, tracker, emit, loaded))
    emit(chosen.report(outcome))
    return outcome
