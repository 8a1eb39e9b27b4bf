"""`prefcraft lampqa compile`: MIPROv2 over PlanPers (planner + answerer), the aspect score as its metric.

MIPROv2 compiles on the train split and selects on the validation split. The compiled program is kept only if it
differs from the uncompiled one and beats it on validation (both scored here with the same metric on the same
questions; DSPy's cache answers the calls MIPROv2 already made). It is saved to `--output` either way, the verdict in
its metadata; only a winner written inside the compiled package is registered as the shipped `lampqa_planner` for the
task model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy

from prefcraft.components.component import StepRun
from prefcraft.components.lampqa.data import SUFFIXES
from prefcraft.components.lampqa.evaluation import build_retriever, retrieval_params, retry_params, select_questions
from prefcraft.components.lampqa.metrics import AspectScore
from prefcraft.components.lampqa.options import CompileOptions
from prefcraft.engine.lm import build_lm
from prefcraft.engine.session import lm_context
from prefcraft.errors import ConfigError
from prefcraft.optimizers.compile_selection import CompileOutcome
from prefcraft.optimizers.compile_step import CompileStep, ModelAccess, compile_and_gate, compile_params
from prefcraft.optimizers.lampqa import PROGRAM_NAME
from prefcraft.optimizers.options import optimizer_config
from prefcraft.programs.lampqa import PLANPERS_RETRIES, PlanPers
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, data_digest

METRIC = "LaMP-QA aspect score: Σ judge scores (0/1/2 per gold aspect) / (2 · #aspects), judge on the judge model"
Splits = tuple[list[dspy.Example], list[dspy.Example]]


def load_compiled_on(options: CompileOptions) -> Splits:
    """The train and validation questions as examples, before any model starts; a retrieval that cannot be built
    stops it here too."""
    if Path(options.source).suffix in SUFFIXES:
        raise ConfigError("compiling needs the train and validation splits, not one file",
                          "pass a folder laid out as <config>/<split>.jsonl, or the hub dataset's name")
    trainset = [question.example() for question in select_questions(options, "train").questions]
    valset = [question.example() for question in select_questions(options, "validation").questions]
    build_retriever(options)
    return trainset, valset


def compile_run_params(options: CompileOptions, run: StepRun) -> dict[str, Any]:
    """The `lampqa-compile` run's params: the data and the sizes of the two splits (`run.loaded`), the retrieval, the
    retries, the optimizer's settings and the models."""
    trainset, valset = run.loaded
    params = {**_data(options), "train": len(trainset), "val": len(valset), **retrieval_params(options),
              **retry_params(options)}
    return compile_params(run.session, PROGRAM_NAME, optimizer_config(options, run.session), params)


def compile_planpers(options: CompileOptions, run: StepRun) -> CompileOutcome:
    trainset, valset = run.loaded
    return compile_and_select(run.session, options, trainset, valset, run.tracker)


def compile_and_select(
    session: Settings, options: CompileOptions, trainset: list[dspy.Example], valset: list[dspy.Example],
    tracker: StepTracker,
) -> CompileOutcome:
    """The optimizer over a new PlanPers (both predictors), then the ship gate: save it with its verdict, ship only a
    winner; recorded in the step's run, which the runner opened (its params `compile_run_params`)."""
    metric = AspectScore(lambda: lm_context(session, "judge"), options.judge_retries)
    retries = options.retries_for(PLANPERS_RETRIES)
    data = _data(options)
    step = CompileStep(
        PROGRAM_NAME, lambda: PlanPers(build_retriever(options), retries=retries), optimizer_config(options, session),
        options.output,
        {"k": options.k, "retriever": options.retriever, "retries": retries, **data,
         "split": {"train": len(trainset), "val": len(valset), "max_questions": options.max_questions},
         "metric": METRIC},
    )  # fmt: skip
    return compile_and_gate(session, tracker, step, metric, trainset, valset, models=ModelAccess(build_lm, lm_context))


def _data(options: CompileOptions) -> dict[str, str]:
    return {"data": str(options.source), "data_digest": data_digest(options.source)}
