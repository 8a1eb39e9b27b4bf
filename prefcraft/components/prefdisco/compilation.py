"""`prefcraft prefdisco compile`: MIPROv2 over the question asker, PrefAlign of its answer gated by correctness.

MIPROv2 compiles on the train scenarios and selects on the validation scenarios (split by problem). The compiled asker
is kept only if it differs from the uncompiled one and beats it on validation, both scored here with the same metric
on the same scenarios (DSPy's cache answers the calls MIPROv2 already made). It is saved to `--output` either way, the
verdict in its metadata; only a winner written inside the compiled package is registered as the shipped asker for the
task model.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from prefcraft.components.component import StepRun
from prefcraft.components.prefdisco.data import Scenario
from prefcraft.components.prefdisco.evaluation import select_scenarios, simulated_users
from prefcraft.components.prefdisco.metrics import GatedPrefAlign
from prefcraft.components.prefdisco.options import CompileOptions
from prefcraft.engine.lm import build_lm
from prefcraft.engine.session import lm_context
from prefcraft.errors import ConfigError
from prefcraft.optimizers.compile_selection import CompileOutcome
from prefcraft.optimizers.compile_step import CompileStep, ModelAccess, compile_and_gate, compile_params
from prefcraft.optimizers.options import optimizer_config
from prefcraft.optimizers.prefdisco import PROGRAM_NAME, asker_example
from prefcraft.programs.prefdisco import QuestionAsker
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, data_digest

Splits = tuple[list[Scenario], list[Scenario]]


def load_compiled_on(options: CompileOptions) -> Splits:
    """The train and validation scenarios, before any model starts."""
    train, val = select_scenarios(options, "train"), select_scenarios(options, "val")
    if not train or not val:
        raise ConfigError("compiling needs train and validation scenarios", "check --val-share / --test-share")
    return train, val


def compile_asker(options: CompileOptions, run: StepRun) -> CompileOutcome:
    train, val = run.loaded
    return compile_and_select(run.session, options, train, val, run.tracker)


def compile_run_params(options: CompileOptions, run: StepRun) -> dict[str, Any]:
    """The params of the `prefdisco-compile` run: the asker's, the data and its split's sizes, the optimizer's and the
    models'."""
    train, val = run.loaded
    params = {**_data(options), "train": len(train), "val": len(val), "max_turns": options.max_turns}
    return compile_params(run.session, PROGRAM_NAME, optimizer_config(options, run.session), params)


def _data(options: CompileOptions) -> dict[str, str]:
    return {"data": str(options.source), "data_digest": data_digest(options.source)}


def compile_and_select(session: Settings, options: CompileOptions, train: Sequence[Scenario],
                       val: Sequence[Scenario], tracker: StepTracker) -> CompileOutcome:
    """The optimizer over a new asker's two predictors (the turn decision and the answer), then the ship gate: save it
    with its verdict, ship only a winner. Recorded in the step's run."""
    metric = GatedPrefAlign({s.scenario_id: s for s in [*train, *val]}, partial(lm_context, session, "judge"))
    trainset, valset = ([asker_example(s.scenario_id, s.question, user)
                         for s, user in zip(split, simulated_users(session, split), strict=True)]
                        for split in (train, val))
    data = _data(options)
    step = CompileStep(
        PROGRAM_NAME, lambda: QuestionAsker(options.max_turns), optimizer_config(options, session), options.output,
        {**data, "max_turns": options.max_turns,
         "split": {"val_share": options.val_share, "test_share": options.test_share,
                   "train": [s.scenario_id for s in train], "val": [s.scenario_id for s in val]},
         "metric": "PrefAlign / 5 of the final answer when the correctness judge accepts it, else 0"},
    )  # fmt: skip
    return compile_and_gate(session, tracker, step, metric, trainset, valset, models=ModelAccess(build_lm, lm_context))
