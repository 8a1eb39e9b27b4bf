"""Every component's compile, one skeleton: the task model's context with its LM usage metered and logged to the run
the runner opened (its params `compile_params`), the configured optimizer over a new program, then the ship gate
(`prefcraft.optimizers.compile_gate.keep_if_better`).

A component says only what differs: its program (`CompileStep.student`), its metric, its run's params and the metadata
its saved program carries. `compile_and_gate` is the whole compile; `metered_compile` and `optimize_and_gate` are its
two halves, for a compile that prepares its metric first (the persona prompt's judges each user's evidence).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from prefcraft.engine.usage import UsageMeter
from prefcraft.optimizers.compile_gate import keep_if_better
from prefcraft.optimizers.compile_selection import CompileOutcome, CompileVerdict
from prefcraft.optimizers.demos import keep_prompt_demos
from prefcraft.optimizers.prompt_optimizer import Metric, OptimizerConfig, PromptOptimizer
from prefcraft.settings import ModelSettings, Role, Settings
from prefcraft.tracking.runs import StepTracker, logged_usage, model_params


@dataclass(frozen=True)
class ModelAccess:
    """How a compile reaches its models: `build_lm` builds the optimizer's prompt and task models, `lm_context` the
    context its programs run in. A component passes the two it imports, so that its own tests can replace them."""

    build_lm: Callable[[ModelSettings], dspy.LM]
    lm_context: Callable[[Settings, Role], AbstractContextManager[Any]]


@dataclass(frozen=True)
class CompileStep:
    """What a component compiles and what its saved program says about it.

    `student` makes a new uncompiled program: the optimizer's start, and the program the compiled one must beat.
    `metadata` is saved with the program, followed by the optimizer's settings (`optimizer`). `prompt_demos_only` cuts
    each predictor's demos down to what its prompt shows (`keep_prompt_demos`); `count_trials` saves how many trials the
    optimizer ran (`trials`).
    """

    program_name: str
    student: Callable[[], dspy.Module]
    config: OptimizerConfig
    output: Path
    metadata: Mapping[str, Any]
    prompt_demos_only: bool = True
    count_trials: bool = False


def compile_params(session: Settings, program_name: str, config: OptimizerConfig,
                   params: Mapping[str, Any]) -> dict[str, Any]:
    """A compile run's params: the program's name, the component's `params`, the optimizer's settings and the
    models'."""
    return {"program": program_name, **params, **config.as_params(), **model_params(session)}


def compile_and_gate(
    session: Settings, tracker: StepTracker, step: CompileStep, metric: Metric, trainset: list[dspy.Example],
    valset: list[dspy.Example], *, models: ModelAccess,
) -> CompileOutcome:
    """The optimizer over `step.student()` on `trainset`, selecting on `valset`, then the ship gate, metered
    (`metered_compile`); the outcome counts the two sets."""
    with metered_compile(session, tracker, models) as meter:
        verdict = optimize_and_gate(session, tracker, step, metric, trainset, valset, models)
    return CompileOutcome(len(trainset), len(valset), verdict, meter.usage, step.config.name)


@contextmanager
def metered_compile(session: Settings, tracker: StepTracker, models: ModelAccess) -> Iterator[UsageMeter]:
    """The task model's context and a usage meter, whose totals are logged to the step's run."""
    with models.lm_context(session, "task"), logged_usage(tracker) as meter:
        yield meter


def optimize_and_gate(
    session: Settings, tracker: StepTracker, step: CompileStep, metric: Metric, trainset: list[dspy.Example],
    valset: list[dspy.Example], models: ModelAccess,
) -> CompileVerdict:
    """The configured optimizer over a new `step.student()`, then `keep_if_better` against another: the compiled
    program is saved to `step.output` with its verdict, and shipped only when it wins on `valset` by `metric`."""
    optimizer = PromptOptimizer(metric, step.config, prompt_model=models.build_lm(session.model_for("prompt")),
                                task_model=models.build_lm(session.task))
    compiled = optimizer.compile(step.student(), trainset=trainset, valset=valset)
    trials = {"trials": len(compiled.compile_record.trial_logs)} if step.count_trials else {}
    return keep_if_better(
        session, tracker, compiled=keep_prompt_demos(compiled) if step.prompt_demos_only else compiled,
        uncompiled=step.student(), valset=valset, score=metric, program_name=step.program_name,
        output=step.output, **step.metadata, optimizer=step.config.as_params(), **trials,
    )  # fmt: skip
