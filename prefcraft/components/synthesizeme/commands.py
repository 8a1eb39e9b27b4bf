"""`prefcraft synthesizeme`: the SynthesizeMe component and its steps, each its options (`options`), work and report.

Steps: `fit` (one personal judge per user: persona from verified reasoning, searched demos), `evaluate` (a split's
pairs judged in both orders against the baselines), `compile-persona` (the persona prompt optimized once),
`import-persona-prompt` (the paper's released persona prompt, for `fit`), `demo` (fit sample users, then compare
with the default judge) and `best-of-n` (a fitted judge picks the best of n candidate responses).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step, deferred_in

at = deferred_in(__package__)

HELP = ("SynthesizeMe: personal judges from verified reasoning (fit, evaluate, compile-persona, import-persona-prompt, "
        "demo, best-of-n)")
# The tour fits two held-out users (the demo fits three): the whole tour stays under 15 minutes.
TOUR_USERS = ["sample_user_07", "sample_user_08"]


def compare(outcome: Any) -> Comparison:
    """The demo's two methods (its `DemoOutcome`), side by side for the tour."""
    methods = outcome.methods
    return Comparison("accuracy, both orders", "default judge", methods["default"].report.accuracy.mean,
                      "SynthesizeMe", methods["synthesizeme"].report.accuracy.mean, "%")


COMPONENT = Component(
    name="synthesizeme", title="SynthesizeMe", help=HELP,
    steps={
        "fit": Step("fit SynthesizeMe personal judges, one compiled JSON per user", at("options", "FitOptions"),
                    at("fit", "fit"), at("report", "format_fit_summary"), at("evaluation", "load_users")),
        "evaluate": Step("judge a split's pairs in both orders and report accuracy", at("options", "EvaluateOptions"),
                         at("evaluation", "evaluate"), at("report", "format_evaluation"),
                         at("evaluation", "load_evaluated")),
        "compile-persona": Step("optimize the persona prompt (MIPROv2 by default), once",
                                at("options", "CompilePersonaOptions"), at("compile_persona", "compile_persona"),
                                at("report", "format_compile_persona"), at("compile_persona", "load_persona_users")),
        "import-persona-prompt": Step("import a persona prompt released with the paper, for fit --persona-prompt",
                                      at("options", "ImportPersonaPromptOptions"),
                                      at("released_prompt", "import_persona_prompt"), at("report", "format_imported"),
                                      models=False, tracked=False),
        "demo": Step("fit sample users, compare with the default judge", at("options", "DemoOptions"),
                     at("demo", "demo"), at("report", "format_demo"), at("evaluation", "load_users")),
        "best-of-n": Step("pick the best of each request's candidate responses with a user's fitted judge",
                          at("options", "BestOfNOptions"), at("best_of_n", "choose"),
                          at("best_of_n", "format_choices"), at("best_of_n", "load_requests")),
    },
    run_names=("fit-synthesizeme", "evaluate", "compile-persona"),
    demo=Demo(lambda _: ["demo", "--users", *TOUR_USERS], compare),
    charts_at=at("charts", "CHARTS"), programs_at=at("fit", "PROGRAMS"),
)
