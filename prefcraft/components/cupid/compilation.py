"""`prefcraft cupid compile`: MIPROv2 over CUPID's preference inferrer, F1 (decomposer + matcher) as its metric.

The instances are split by persona; MIPROv2 compiles on the train personas and selects on the validation personas.
The compiled program is kept only if it differs from the uncompiled one and beats it on validation (both scored here
with the same metric on the same instances; DSPy's cache answers the calls MIPROv2 already made). It is saved to
`--output` either way, the verdict in its metadata; only a winner written inside the compiled package is registered as
the shipped inferrer for the task model. The runner opens the step's MLflow run ("cupid-compile", its params
`compile_run_params`); the compile records into it.
"""

from __future__ import annotations

from typing import Any

import dspy

from prefcraft.components.component import StepRun
from prefcraft.components.cupid.evaluation import decomposer_max_tokens, select_instances
from prefcraft.components.cupid.metrics import PreferenceF1
from prefcraft.components.cupid.options import CompileOptions
from prefcraft.components.cupid.results import CupidCompileOutcome
from prefcraft.engine.lm import build_lm
from prefcraft.engine.session import lm_context
from prefcraft.errors import ConfigError
from prefcraft.optimizers.compile_step import CompileStep, ModelAccess, compile_and_gate, compile_params
from prefcraft.optimizers.cupid import PROGRAM_NAME, labeled
from prefcraft.optimizers.options import optimizer_config
from prefcraft.programs.cupid import PreferenceInferrer, PreferenceMatch
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, data_digest

Splits = tuple[list[dspy.Example], list[dspy.Example]]


def load_compiled_on(options: CompileOptions) -> Splits:
    """The train and validation instances as examples, before any model starts."""
    train, _ = select_instances(options, "train")
    val, _ = select_instances(options, "val")
    if not train or not val:
        raise ConfigError("compiling needs train and validation personas", "check --val-personas / --test-personas")
    return [instance.example() for instance in train], [instance.example() for instance in val]


def compile_run_params(options: CompileOptions, run: StepRun) -> dict[str, Any]:
    """The compile run's params: the program, the inferrer's variant, the data, the train and validation sets
    `load_compiled_on` read (`run.loaded`), the optimizer's settings and the models (`compile_params`)."""
    trainset, valset = run.loaded
    return compile_params(run.session, PROGRAM_NAME, optimizer_config(options, run.session),
                          _run_params(options, trainset, valset))


def compile_inferrer(options: CompileOptions, run: StepRun) -> CupidCompileOutcome:
    trainset, valset = run.loaded
    return compile_and_select(run.session, options, trainset, valset, run.tracker)


def compile_and_select(
    session: Settings, options: CompileOptions, trainset: list[dspy.Example], valset: list[dspy.Example],
    tracker: StepTracker,
) -> CupidCompileOutcome:
    """The optimizer over a new inferrer of the options' variant (`inferrer`), on labeled training examples, then the
    ship gate: save it with its verdict, ship only a winner. The saved program's metadata names its variant `variant`,
    as the program does (`prefcraft.optimizers.cupid.new_inferrer` reads it back). Recorded in the run `tracker`
    records in (the compile run the runner opened, `compile_run_params`)."""
    metric = PreferenceF1(PreferenceMatch(decomposer_max_tokens(session)), lambda: lm_context(session, "judge"))
    described = _described(options)
    step = CompileStep(
        PROGRAM_NAME, lambda: PreferenceInferrer(options.inferrer), optimizer_config(options, session), options.output,
        {"variant": options.inferrer, **described,
         "split": {"val_personas": options.val_personas, "test_personas": options.test_personas,
                   "train": len(trainset), "val": len(valset)},
         "metric": "per-instance F1 of the preference match (decomposer + matcher on the judge model)"},
    )  # fmt: skip
    outcome = compile_and_gate(session, tracker, step, metric, [labeled(e) for e in trainset], valset,
                               models=ModelAccess(build_lm, lm_context))
    return CupidCompileOutcome(**vars(outcome), inferrer=options.inferrer)


def _described(options: CompileOptions) -> dict[str, str]:
    """The data compiled on: its source and digest."""
    return {"data": str(options.source), "data_digest": data_digest(options.source)}


def _run_params(options: CompileOptions, trainset: list[dspy.Example], valset: list[dspy.Example]) -> dict[str, Any]:
    """The component's own params of the compile run (`compile_params` adds the program, optimizer and models)."""
    return {"inferrer": options.inferrer, **_described(options), "train": len(trainset), "val": len(valset)}
