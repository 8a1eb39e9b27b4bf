"""The tour's closing table: one line per component, its baseline against its personalized method, and the cost."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prefcraft.components.component import Comparison
from prefcraft.usage import LMUsage

NOTE = ("On SmolLM2-135M these show that each pipeline runs end to end, not the papers' effects; the data are the "
        "bundled SYNTHETIC samples (SenseJudge: real SenseBench requests, SIMULATED labels). LM calls exclude cache "
        "hits.")


@dataclass
class TourRow:
    component: str
    comparison: Comparison | None = None
    usage: LMUsage = field(default_factory=LMUsage)
    seconds: float = 0.0
    skipped: str | None = None
    failed: str | None = None


def format_tour(rows: list[TourRow]) -> str:
    lines = ["", "=== the tour, in one table", NOTE,
             f"{'component':<13} {'metric':<42} {'baseline':<34} {'personalized':<40} {'LM calls':>8} {'wall':>7}"]
    for row in rows:
        if row.skipped or row.failed:
            status = f"skipped: {row.skipped}" if row.skipped else f"FAILED: {row.failed}"
            lines.append(f"{row.component:<13} {status}")
            continue
        comparison = row.comparison
        lines.append(f"{row.component:<13} {comparison.metric:<42} "
                     f"{_score(comparison.baseline, comparison.baseline_score, comparison):<34} "
                     f"{_score(comparison.personalized, comparison.personalized_score, comparison):<40} "
                     f"{row.usage.calls:>8} {_duration(row.seconds):>7}")
    total_calls = sum(row.usage.calls for row in rows)
    total_seconds = sum(row.seconds for row in rows)
    lines.append(f"{'all':<13} {'':<42} {'':<34} {'':<40} {total_calls:>8} {_duration(total_seconds):>7}")
    return "\n".join(lines)


def _score(name: str, value: float, comparison: Comparison) -> str:
    if math.isnan(value):
        return f"{name} -"
    return f"{name} {100 * value:.1f}%" if comparison.scale == "%" else f"{name} {value:.2f}"


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"
