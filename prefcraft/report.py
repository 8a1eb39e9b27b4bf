"""Plain-text tables of results for the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefcraft.metrics.pairwise import PairwiseReport
from prefcraft.usage import LMUsage

if TYPE_CHECKING:
    from prefcraft.commands.fit import FitSummary


def format_report(name: str, report: PairwiseReport, usage: LMUsage) -> str:
    lines = [
        f"{name}: accuracy over both orders {report.accuracy}",
        f"  chosen shown first   {report.chosen_first}",
        f"  chosen shown second  {report.chosen_second}",
        f"  both orders right    {report.pair_accuracy}",
        f"  consistency {100 * report.consistency:.1f}%, unparseable {report.parse_failures}",
        f"  LM calls {usage.calls}, prompt tokens {usage.prompt_tokens}, completion tokens {usage.completion_tokens}",
        "  per user:",
    ]
    lines += [f"    {user_id:<20} {estimate}" for user_id, estimate in report.per_user.items()]
    return "\n".join(lines)


def format_fit_summary(summary: FitSummary) -> str:
    lines = [f"fitted {len(summary.fitted)} user(s), resumed {len(summary.resumed)}, skipped {len(summary.skipped)}"]
    lines += [f"  skipped {user_id}: {reason}" for user_id, reason in summary.skipped.items()]
    return "\n".join(lines)
