"""`prefcraft tour`, the main job: each component's own demo on the embedded model, one after another, under one MLflow
parent run, then one table: the component's metric for its baseline and its personalized method, LM calls and time.

Each part is the component's `demo` step run as its command line would run it (no second copy of any pipeline), with
its own model session; a part that fails is reported in the table and the others still run.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from prefcraft.commands.tour_table import TourRow, format_tour
from prefcraft.components.component import Component, Emit
from prefcraft.engine.usage import metered
from prefcraft.errors import PrefcraftError
from prefcraft.flags import parse_step
from prefcraft.registry import COMPONENTS
from prefcraft.runner import run_step
from prefcraft.settings import Settings
from prefcraft.tracking.runs import log_json, model_params, start_tracking

logger = logging.getLogger(__name__)


def run_tour(settings: Settings, components: Sequence[str], sensebench: Path | None, emit: Emit) -> list[TourRow]:
    """Run the chosen components' demos in the tour's order; raises after the table when any of them failed."""
    tracker = start_tracking(settings)
    chosen = [component for component in COMPONENTS.values() if component.name in components]
    with tracker.run("tour", {"components": [component.title for component in chosen], **model_params(settings)}):
        rows = [_run_part(settings, component, sensebench, emit) for component in chosen]
        tracker.log_metrics({name: value for component, row in zip(chosen, rows, strict=True)
                             for name, value in _row_metrics(component.name, row).items()})
        log_json(tracker, [asdict(row) for row in rows], "tour.json")
        emit(format_tour(rows))
        failed = [row.component for row in rows if row.failed]
        if failed:
            raise PrefcraftError(f"the tour finished, but {', '.join(failed)} failed (see the table above)")
    return rows


def _run_part(settings: Settings, component: Component, sensebench: Path | None, emit: Emit) -> TourRow:
    argv = component.demo.argv(sensebench)
    if argv is None:
        return TourRow(component.title, skipped="needs SenseBench dialogues (not shipped): pass --sensebench PATH")
    emit(f"\n=== {component.title}: prefcraft {component.name} {' '.join(argv)}")
    step, *flags = argv
    started = time.perf_counter()
    row = TourRow(component.title)
    with metered() as meter:
        try:
            outcome = run_step(component.name, step, parse_step(component, step, flags), settings)
            row.comparison = component.demo.compare(outcome)
        except PrefcraftError as error:
            logger.error("%s failed: %s", component.title, error)
            row.failed = error.message
    row.usage, row.seconds = meter.usage, time.perf_counter() - started
    return row


def _row_metrics(key: str, row: TourRow) -> dict[str, float]:
    prefix = f"{key}_"
    metrics = {**row.usage.as_metrics(prefix), f"{prefix}seconds": row.seconds}
    if row.comparison is not None:
        metrics[f"{prefix}baseline"] = row.comparison.baseline_score
        metrics[f"{prefix}personalized"] = row.comparison.personalized_score
    return {name: value for name, value in metrics.items() if not math.isnan(value)}
