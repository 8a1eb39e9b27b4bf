"""`prefcraft synthesizeme demo`: fit the demo's users, then judge their test pairs with the baseline judge (no user
context) and with their fitted ones, in one model session."""

from __future__ import annotations

from dataclasses import dataclass

from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme.evaluation import MethodOutcome, evaluate_methods, select_judged
from prefcraft.components.synthesizeme.fit import FitSummary, fit_users
from prefcraft.components.synthesizeme.options import DemoOptions

DEMO_METHODS = ["baseline", "synthesizeme"]


@dataclass(frozen=True)
class DemoOutcome:
    """The fit (`fit`), then each method's outcome as `evaluate` returns them (`methods`: what the tour compares)."""

    fit: FitSummary
    methods: dict[str, MethodOutcome]


def demo(options: DemoOptions, run: StepRun) -> DemoOutcome:
    """The demo's users (`load_users` read them) fitted, then judged by each of DEMO_METHODS."""
    summary = fit_users(run, options, run.loaded, options.search_config(run.session))
    selection = select_judged(options, DEMO_METHODS, summary.judges, {})
    return DemoOutcome(summary, evaluate_methods(run, options, DEMO_METHODS, selection))
