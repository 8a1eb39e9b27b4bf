"""The template component's terminal report."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefcraft.components.example.evaluation import EvaluationOutcome


def format_evaluation(outcome: EvaluationOutcome) -> str:
    return (f"Example: {outcome.answered} of {outcome.requests} requests answered "
            f"({outcome.answered_share:.0%}); answers in {outcome.results}; {outcome.usage.calls} model calls")
