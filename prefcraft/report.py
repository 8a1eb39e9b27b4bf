"""Plain-text tables of results for the terminal."""

from __future__ import annotations

from prefcraft.metrics.pairwise import PairwiseReport
from prefcraft.usage import LMUsage


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
