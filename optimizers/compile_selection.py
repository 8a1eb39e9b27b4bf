"""A compile ships only when it wins: the compiled and the uncompiled program scored on the same validation set.

Both are scored with the compile's own metric through `evaluate_program` (one MLflow child run each); the optimizer's
full evaluations made most of these calls already, so DSPy's cache answers them. Nothing is scored or saved unless
every server still answers: the optimizer scores a failed call as 0 and goes on, so a server that died during the
compile leaves a program chosen on zeros, and its validation here may come from the cache alone. A compiled program
that changed nothing, or did not beat the uncompiled one, is saved beside the results as `<program>.rejected.json` and
never registered; a winner is saved to the requested path and, inside the compiled package, registered for the task
model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from prefcraft.evaluation import evaluate_program
from prefcraft.optimizers.artifacts import register_compiled, save_compiled
from prefcraft.runtime import check_servers
from prefcraft.settings import Settings
from prefcraft.tracking import log_file, log_metrics, tracked_run
from prefcraft.usage import LMUsage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompileVerdict:
    uncompiled_score: float
    compiled_score: float
    differs: bool
    path: Path
    registered: bool

    @property
    def won(self) -> bool:
        return self.differs and self.compiled_score > self.uncompiled_score


@dataclass(frozen=True)
class CompileOutcome:
    """What a component's compile command did: its data sizes, the verdict, the LM usage and the optimizer's name."""

    train: int
    val: int
    verdict: CompileVerdict
    usage: LMUsage
    optimizer: str


def keep_if_better(
    session: Settings,
    *,
    compiled: dspy.Module,
    uncompiled: dspy.Module,
    valset: list[dspy.Example],
    score: Callable[[dspy.Example, dspy.Prediction], float],
    program_name: str,
    output: Path,
    rejected_dir: Path,
    **metadata: Any,
) -> CompileVerdict:
    """Score both programs on `valset`, save the compiled one where its verdict says, and log the verdict."""
    check_servers(session)
    uncompiled_score = validation_score(session, "uncompiled", uncompiled, valset, score)
    compiled_score = validation_score(session, "compiled", compiled, valset, score)
    differs = differs_from(compiled, uncompiled)
    won = differs and compiled_score > uncompiled_score
    path = output if won else rejected_dir / f"{program_name}.rejected.json"
    save_compiled(compiled, path, program_name=program_name, model=session.task.model,
                  score={"val_compiled": compiled_score, "val_uncompiled": uncompiled_score}, **metadata)
    registered = won and register_compiled(program_name, session.task.model, path)
    log_metrics({"val_compiled": compiled_score, "val_uncompiled": uncompiled_score, "won": float(won)})
    log_file(path)
    if not won:
        logger.warning("the compiled %s did not beat the uncompiled one on validation: not shipped (%s)",
                       program_name, path)
    return CompileVerdict(uncompiled_score, compiled_score, differs, path, registered)


def validation_score(
    session: Settings, name: str, program: dspy.Module, valset: list[dspy.Example],
    score: Callable[[dspy.Example, dspy.Prediction], float],
) -> float:
    """The mean of `score` over `valset`, as the optimizer scores it; one MLflow child run named `<name>-on-val`."""
    with tracked_run(f"{name}-on-val", nested=True):
        scored, usage = evaluate_program(program, valset, score, model=session.task, num_threads=session.num_threads)
        mean = sum(value for _, _, value in scored) / len(scored)
        log_metrics({"val_score": mean, **usage.as_metrics()})
    return mean


def differs_from(compiled: dspy.Module, uncompiled: dspy.Module) -> bool:
    """Whether any predictor's instructions or demos changed."""
    return any(
        after.signature.instructions != before.signature.instructions or after.demos != before.demos
        for (_, after), (_, before) in zip(compiled.named_predictors(), uncompiled.named_predictors(), strict=True)
    )
