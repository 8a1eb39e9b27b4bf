"""`prefcraft synthesizeme demo`: fit the demo's users, then judge their test pairs with the baseline judge (no user
context) and with their fitted ones, in one model session; each part in the run its step opens (`fit-synthesizeme`,
then `evaluate`)."""

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
    """The demo's users (`load_users` read them) fitted in the `fit` step's run, then judged by each of DEMO_METHODS
    in the `evaluate` step's run (its params read what it judges, the `Selection`, as `evaluate`'s do)."""
    with run.open_step("fit", options):
        summary = fit_users(run, options, run.loaded, options.search_config(run.session))
    selection = select_judged(options, DEMO_METHODS, summary.judges, {})
    with run.open_step("evaluate", options, loaded=selection):
        methods = evaluate_methods(run, options, selection)
    return DemoOutcome(summary, methods)
