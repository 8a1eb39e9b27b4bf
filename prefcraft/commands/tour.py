"""`prefcraft tour`, the main job: each component's own demo on the embedded model, one after another, under one MLflow
parent run, then one table: the component's metric for its baseline and its personalized method, LM calls and time.

Each part is the component's demo command line run through `prefcraft.cli.run_command` (no second copy of any
pipeline), with its own model session; a part that fails is reported in the table and the others still run.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from prefcraft.errors import PrefcraftError
from prefcraft.settings import Settings
from prefcraft.tracking import log_json, log_metrics, model_params, start_tracking, tracked_run
from prefcraft.usage import LMUsage, metered

logger = logging.getLogger(__name__)

# SynthesizeMe fits two held-out users here (its own demo fits three): the whole tour stays under 15 minutes.
TOUR_USERS = ["sample_user_07", "sample_user_08"]


@dataclass(frozen=True)
class Comparison:
    metric: str
    baseline: str
    baseline_score: float
    personalized: str
    personalized_score: float
    scale: str
    """How to print the scores: "%" (a share, as a percentage) or "points" (the metric's own scale, 2 decimals)."""


@dataclass
class TourRow:
    component: str
    comparison: Comparison | None = None
    usage: LMUsage = field(default_factory=LMUsage)
    seconds: float = 0.0
    skipped: str | None = None
    failed: str | None = None


@dataclass(frozen=True)
class TourPart:
    component: str
    argv: Callable[[Path | None], list[str] | None]
    """The demo's command line, given the SenseBench path (None when the part cannot run without it)."""
    compare: Callable[[Any], Comparison]
    """Baseline against personalized, from the outcome `run_command` returns."""

    @property
    def key(self) -> str:
        """The name on the command line and in metric names: lower case, letters only."""
        return self.component.lower().replace("-", "")


def _synthesizeme(outcomes: dict[str, Any]) -> Comparison:
    return Comparison("accuracy, both orders", "default judge", outcomes["default"].report.accuracy.mean,
                      "SynthesizeMe", outcomes["synthesizeme"].report.accuracy.mean, "%")


def _sensejudge(outcomes: dict[str, Any]) -> Comparison:
    evaluation = outcomes["evaluate"]
    no_description = evaluation.rows[0]
    return Comparison("accuracy, both orders (simulated labels)", no_description.name,
                      no_description.report.accuracy.mean, evaluation.selected.name,
                      evaluation.selected.report.accuracy.mean, "%")


def _prefdisco(outcome: Any) -> Comparison:
    overall = [summary for summary in outcome.summaries if summary.task == "all"] or outcome.summaries
    by_condition = {summary.condition: summary.pref_align.mean for summary in overall}
    return Comparison("PrefAlign (1-5)", "baseline (no questions)", by_condition["baseline"],
                      "discovery (asks first)", by_condition["discovery"], "points")


def _cupid(outcome: Any) -> Comparison:
    scores = {response.method: response.score.mean for response in outcome.responses}
    return Comparison("response score (judge, 1-10)", "no preference", scores["none"], "inferred preference",
                      scores["inferred"], "points")


def _lampqa(outcome: Any) -> Comparison:
    return Comparison("aspect score", "no personalization", outcome.methods["none"].report.overall.mean,
                      "PlanPers (plan, then answer)", outcome.methods["planpers"].report.overall.mean, "points")


def _sensejudge_argv(sensebench: Path | None) -> list[str] | None:
    return ["sensejudge", "demo", "--dialogues", str(sensebench)] if sensebench else None


PARTS = (
    TourPart("SynthesizeMe", lambda _: ["demo", "--users", *TOUR_USERS], _synthesizeme),
    TourPart("SenseJudge", _sensejudge_argv, _sensejudge),
    TourPart("PrefDisco", lambda _: ["prefdisco", "demo"], _prefdisco),
    TourPart("CUPID", lambda _: ["cupid", "demo"], _cupid),
    TourPart("LaMP-QA", lambda _: ["lampqa", "demo"], _lampqa),
)
COMPONENT_KEYS = [part.key for part in PARTS]


def run_tour(
    settings: Settings, components: Sequence[str], sensebench: Path | None, emit: Callable[[str], None]
) -> list[TourRow]:
    """Run the chosen components' demos in the tour's order; raises after the table when any of them failed."""
    from prefcraft.tour_report import format_tour

    start_tracking(settings)
    chosen = [part for part in PARTS if part.key in components]
    with tracked_run("tour", {"components": [part.component for part in chosen], **model_params(settings)}):
        rows = [_run_part(settings, part, sensebench, emit) for part in chosen]
        log_metrics({name: value for part, row in zip(chosen, rows, strict=True)
                     for name, value in _row_metrics(part.key, row).items()})
        log_json([asdict(row) for row in rows], "tour.json")
        emit(format_tour(rows))
        failed = [row.component for row in rows if row.failed]
        if failed:
            raise PrefcraftError(f"the tour finished, but {', '.join(failed)} failed (see the table above)")
    return rows


def _run_part(settings: Settings, part: TourPart, sensebench: Path | None, emit: Callable[[str], None]) -> TourRow:
    from prefcraft.cli import make_parser, run_command

    argv = part.argv(sensebench)
    if argv is None:
        return TourRow(part.component, skipped="needs SenseBench dialogues (not shipped): pass --sensebench PATH")
    emit(f"\n=== {part.component}: prefcraft {' '.join(argv)}")
    started = time.perf_counter()
    row = TourRow(part.component)
    with metered() as meter:
        try:
            row.comparison = part.compare(run_command(make_parser().parse_args(argv), settings))
        except PrefcraftError as error:
            logger.error("%s failed: %s", part.component, error)
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
