"""`prefcraft synthesizeme demo`: fit the demo's users, then judge their test pairs with the default judge and with
their fitted ones, in one model session."""

from __future__ import annotations

from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme.evaluation import MethodOutcome, evaluate_methods, select_judged
from prefcraft.components.synthesizeme.fit import FitSummary, fit_users
from prefcraft.components.synthesizeme.options import DemoOptions

DEMO_METHODS = ["default", "synthesizeme"]


class DemoOutcome(dict[str, MethodOutcome]):
    """Each method's outcome, as `evaluate` returns them (what the tour compares), and the fit before them (`fit`)."""

    def __init__(self, fit: FitSummary, methods: dict[str, MethodOutcome]) -> None:
        super().__init__(methods)
        self.fit = fit


def demo(options: DemoOptions, run: StepRun) -> DemoOutcome:
    """The demo's users (`load_users` read them) fitted, then judged by each of DEMO_METHODS."""
    summary = fit_users(run, options, run.loaded, options.search_config(run.session))
    selection = select_judged(options, DEMO_METHODS, summary.judges, {})
    return DemoOutcome(summary, evaluate_methods(run, options, DEMO_METHODS, selection))
