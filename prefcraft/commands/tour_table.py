"""The tour's closing table: one line per component, its baseline against its personalized method, and the cost."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prefcraft.components.component import Comparison
from prefcraft.engine.usage import LMUsage

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
    compared = [row for row in rows if row.comparison and not (row.skipped or row.failed)]
    cells = {row.component: (row.comparison.metric,
                             _score(row.comparison.baseline, row.comparison.baseline_score, row.comparison),
                             _score(row.comparison.personalized, row.comparison.personalized_score, row.comparison))
             for row in compared}
    metric, baseline, personalized = (max([least, *(len(texts[column]) for texts in cells.values())])
                                      for column, least in enumerate((42, 34, 40)))
    lines = ["", "=== the tour, in one table", NOTE,
             f"{'component':<13} {'metric':<{metric}} {'baseline':<{baseline}} {'personalized':<{personalized}} "
             f"{'LM calls':>8} {'wall':>7}"]
    for row in rows:
        if row.component not in cells:
            status = f"skipped: {row.skipped}" if row.skipped else f"FAILED: {row.failed}"
            lines.append(f"{row.component:<13} {status}")
            continue
        texts = cells[row.component]
        lines.append(f"{row.component:<13} {texts[0]:<{metric}} {texts[1]:<{baseline}} {texts[2]:<{personalized}} "
                     f"{row.usage.calls:>8} {_duration(row.seconds):>7}")
    total_calls = sum(row.usage.calls for row in rows)
    total_seconds = sum(row.seconds for row in rows)
    lines.append(f"{'all':<13} {'':<{metric}} {'':<{baseline}} {'':<{personalized}} {total_calls:>8} "
                 f"{_duration(total_seconds):>7}")
    return "\n".join(lines)


def _score(name: str, value: float, comparison: Comparison) -> str:
    if math.isnan(value):
        return f"{name} -"
    return f"{name} {100 * value:.1f}%" if comparison.scale == "%" else f"{name} {value:.2f}"


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"
