"""`prefcraft synthesizeme`: the SynthesizeMe component and its steps, each its options (`options`), work and report.

Steps: `fit` (one personal judge per user: persona from verified reasoning, searched demos), `evaluate` (a split's
pairs judged in both orders against the baselines), `compile-persona` (the persona prompt optimized once),
`import-persona-prompt` (the paper's released persona prompt, for `fit`), `demo` (fit sample users, then compare
with the baseline judge) and `best-of-n` (a fitted judge picks the best of n candidate responses).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, ReportCharts, Step, StepCode
from prefcraft.options import Options

HELP = ("SynthesizeMe: personal judges from verified reasoning (fit, evaluate, compile-persona, import-persona-prompt, "
        "demo, best-of-n)")
# The tour fits two held-out users (the demo fits three): the whole tour stays under 15 minutes.
TOUR_USERS = ["sample_user_07", "sample_user_08"]


def compare(outcome: Any) -> Comparison:
    """The demo's two methods (its `DemoOutcome`), side by side for the tour."""
    methods = outcome.methods
    return Comparison("accuracy, both orders", "baseline (no user context)", methods["baseline"].report.accuracy.mean,
                      "SynthesizeMe", methods["synthesizeme"].report.accuracy.mean, "%")


# Each step's options and code, imported when a step's flags are built or it runs: `prefcraft synthesizeme --help`
# imports none.
def _fit_options() -> type[Options]:
    from prefcraft.components.synthesizeme.options import FitOptions
    return FitOptions


def _evaluate_options() -> type[Options]:
    from prefcraft.components.synthesizeme.options import EvaluateOptions
    return EvaluateOptions


def _compile_persona_options() -> type[Options]:
    from prefcraft.components.synthesizeme.options import CompilePersonaOptions
    return CompilePersonaOptions


def _import_persona_prompt_options() -> type[Options]:
    from prefcraft.components.synthesizeme.options import ImportPersonaPromptOptions
    return ImportPersonaPromptOptions


def _demo_options() -> type[Options]:
    from prefcraft.components.synthesizeme.options import DemoOptions
    return DemoOptions


def _best_of_n_options() -> type[Options]:
    from prefcraft.components.synthesizeme.options import BestOfNOptions
    return BestOfNOptions


def _fit_code() -> StepCode:
    from prefcraft.components.synthesizeme.evaluation import load_users
    from prefcraft.components.synthesizeme.fit import fit, fit_params
    from prefcraft.components.synthesizeme.report import format_fit_summary
    return StepCode(fit, format_fit_summary, load_users, fit_params)


def _evaluate_code() -> StepCode:
    from prefcraft.components.synthesizeme.evaluation import evaluate, evaluate_params, load_evaluated
    from prefcraft.components.synthesizeme.report import format_evaluation
    return StepCode(evaluate, format_evaluation, load_evaluated, evaluate_params)


def _compile_persona_code() -> StepCode:
    from prefcraft.components.synthesizeme.compile_persona import (
        compile_persona,
        compile_persona_params,
        load_persona_users,
    )
    from prefcraft.components.synthesizeme.report import format_compile_persona
    return StepCode(compile_persona, format_compile_persona, load_persona_users, compile_persona_params)


def _import_persona_prompt_code() -> StepCode:
    from prefcraft.components.synthesizeme.released_prompt import import_persona_prompt
    from prefcraft.components.synthesizeme.report import format_imported
    return StepCode(import_persona_prompt, format_imported)


def _demo_code() -> StepCode:
    from prefcraft.components.synthesizeme.demo import demo
    from prefcraft.components.synthesizeme.evaluation import load_users
    from prefcraft.components.synthesizeme.report import format_demo
    return StepCode(demo, format_demo, load_users)


def _best_of_n_code() -> StepCode:
    from prefcraft.components.synthesizeme.best_of_n import best_of_n_params, choose, format_choices, load_requests
    return StepCode(choose, format_choices, load_requests, best_of_n_params)


def _charts() -> ReportCharts:
    from prefcraft.components.synthesizeme.charts import CHARTS
    return CHARTS


def _programs() -> dict[str, Any]:
    from prefcraft.components.synthesizeme.fit import PROGRAMS
    return PROGRAMS


COMPONENT = Component(
    name="synthesizeme", title="SynthesizeMe", help=HELP,
    steps={
        "fit": Step("fit SynthesizeMe personal judges, one compiled JSON per user", _fit_options, _fit_code,
                    run_name="fit-synthesizeme"),
        "evaluate": Step("judge a split's pairs in both orders and report accuracy", _evaluate_options,
                         _evaluate_code, run_name="evaluate"),
        "compile-persona": Step("optimize the persona prompt (MIPROv2 by default), once",
                                _compile_persona_options, _compile_persona_code, run_name="compile-persona"),
        "import-persona-prompt": Step("import a persona prompt released with the paper, for fit --persona-prompt",
                                      _import_persona_prompt_options, _import_persona_prompt_code, models=False,
                                      tracked=False),
        # The demo opens no run of its own: its fit and its evaluation each run in their step's run (`open_step`).
        "demo": Step("fit sample users, compare with the baseline judge", _demo_options, _demo_code),
        "best-of-n": Step("pick the best of each request's candidate responses with a user's fitted judge",
                          _best_of_n_options, _best_of_n_code, run_name="best-of-n"),
    },
    demo=Demo(lambda _: ["demo", "--users", *TOUR_USERS], compare),
    import_charts=_charts, import_programs=_programs,
)
