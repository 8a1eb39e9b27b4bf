"""`prefcraft synthesizeme`: the SynthesizeMe component and its steps, each its options (`options`), work and report.

Steps: `fit` (one personal judge per user: persona from verified reasoning, searched demos), `evaluate` (a split's
pairs judged in both orders against the baselines), `compile-persona` (the persona prompt optimized once),
`import-persona-prompt` (the paper's released persona prompt, for `fit`) and `demo` (fit sample users, then compare
with the default judge).
"""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step
from prefcraft.components.synthesizeme.charts import CHARTS
from prefcraft.components.synthesizeme.compile_persona import compile_persona, load_persona_users
from prefcraft.components.synthesizeme.demo import demo
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE, evaluate, load_evaluated, load_users
from prefcraft.components.synthesizeme.fit import PERSONA_SYNTHESIZER, fit
from prefcraft.components.synthesizeme.options import (
    CompilePersonaOptions,
    DemoOptions,
    EvaluateOptions,
    FitOptions,
    ImportPersonaPromptOptions,
)
from prefcraft.components.synthesizeme.released_prompt import import_persona_prompt
from prefcraft.components.synthesizeme.report import (
    format_compile_persona,
    format_demo,
    format_evaluation,
    format_fit_summary,
    format_imported,
)
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer

HELP = ("SynthesizeMe: personal judges from verified reasoning (fit, evaluate, compile-persona, import-persona-prompt, "
        "demo)")
# The tour fits two held-out users (the demo fits three): the whole tour stays under 15 minutes.
TOUR_USERS = ["sample_user_07", "sample_user_08"]


def compare(outcomes: dict[str, Any]) -> Comparison:
    return Comparison("accuracy, both orders", "default judge", outcomes["default"].report.accuracy.mean,
                      "SynthesizeMe", outcomes["synthesizeme"].report.accuracy.mean, "%")


COMPONENT = Component(
    name="synthesizeme", title="SynthesizeMe", help=HELP,
    steps={
        "fit": Step("fit SynthesizeMe personal judges, one compiled JSON per user", FitOptions, fit,
                    format_fit_summary, load_users),
        "evaluate": Step("judge a split's pairs in both orders and report accuracy", EvaluateOptions, evaluate,
                         format_evaluation, load_evaluated),
        "compile-persona": Step("optimize the persona prompt (MIPROv2 by default), once", CompilePersonaOptions,
                                compile_persona, format_compile_persona, load_persona_users),
        "import-persona-prompt": Step("import a persona prompt released with the paper, for fit --persona-prompt",
                                      ImportPersonaPromptOptions, import_persona_prompt, format_imported,
                                      models=False, tracked=False),
        "demo": Step("fit sample users, compare with the default judge", DemoOptions, demo, format_demo, load_users),
    },
    run_names=("fit-synthesizeme", "evaluate", "compile-persona"),
    demo=Demo(lambda _: ["demo", "--users", *TOUR_USERS], compare),
    charts=CHARTS,
    programs={PERSONAL_JUDGE: lambda _: PreferenceJudge(), PERSONA_SYNTHESIZER: lambda _: PersonaSynthesizer()},
)
