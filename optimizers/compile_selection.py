"""A compile ships only when it wins: the compiled and the uncompiled program scored on the same validation set.

Both are scored with the compile's own metric through `evaluate_program` (one MLflow child run each); the optimizer's
full evaluations made most of these calls already, so DSPy's cache answers them. Nothing is scored or saved unless
every server still answers: the optimizer scores a failed call as 0 and goes on, so a server that died during the
compile leaves a program chosen on zeros, and its validation here may come from the cache alone. A compiled program
that changed nothing, gave any degenerate output on validation (empty, a template placeholder, the field's own name), or
did not beat the uncompiled one, is saved beside the results as `<program>.rejected.json` and never registered; a
winner is saved to the requested path and, inside the compiled package, registered for the task model.

Any degenerate output refuses a compile, even when the uncompiled program gave as many: a shipped program becomes the
default of every command on its model, while refusing it leaves the uncompiled program in use, which is no change.
Graders have scored degenerate outputs well (a matcher gave the literal word "preference" F1 85.7), so a higher score
does not outweigh them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from prefcraft.evaluation import degenerate_outputs, evaluate_program
from prefcraft.optimizers.artifacts import register_compiled, save_compiled
from prefcraft.runtime import check_servers
from prefcraft.settings import Settings
from prefcraft.tracking import log_file, log_metrics, tracked_run
from prefcraft.usage import LMUsage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Validation:
    """A program's validation: the mean of the compile's metric and how many outputs were degenerate."""

    score: float
    degenerate: int


def ship_decision(uncompiled: Validation, compiled: Validation, differs: bool) -> tuple[bool, str]:
    """Whether a compiled program wins, and why: it must differ, give no degenerate output and beat the uncompiled
    program's score."""
    scores = f"validation {compiled.score:.3f} against {uncompiled.score:.3f} uncompiled"
    if not differs:
        return False, "it changed no instruction or demo"
    if compiled.degenerate:
        return False, (f"{compiled.degenerate} of its validation outputs are degenerate (empty, a template placeholder "
                       f"or the field's own name; uncompiled: {uncompiled.degenerate}); {scores}")
    if compiled.score <= uncompiled.score:
        return False, f"it did not beat the uncompiled program: {scores}"
    return True, f"it beat the uncompiled program with no degenerate output: {scores}"


@dataclass(frozen=True)
class CompileVerdict:
    uncompiled_score: float
    compiled_score: float
    differs: bool
    path: Path
    registered: bool
    uncompiled_degenerate: int = 0
    compiled_degenerate: int = 0

    @property
    def won(self) -> bool:
        return self._decision[0]

    @property
    def reason(self) -> str:
        return self._decision[1]

    @property
    def _decision(self) -> tuple[bool, str]:
        return ship_decision(Validation(self.uncompiled_score, self.uncompiled_degenerate),
                             Validation(self.compiled_score, self.compiled_degenerate), self.differs)


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
    before = validation_score(session, "uncompiled", uncompiled, valset, score)
    after = validation_score(session, "compiled", compiled, valset, score)
    differs = differs_from(compiled, uncompiled)
    won, reason = ship_decision(before, after, differs)
    path = output if won else rejected_dir / f"{program_name}.rejected.json"
    measured = {"val_compiled": after.score, "val_uncompiled": before.score,
                "val_degenerate_compiled": after.degenerate, "val_degenerate_uncompiled": before.degenerate}
    save_compiled(compiled, path, program_name=program_name, model=session.task.model, score=measured, **metadata)
    registered = won and register_compiled(program_name, session.task.model, path)
    log_metrics({**measured, "won": float(won)})
    log_file(path)
    if won:
        logger.info("the compiled %s wins: %s (%s)", program_name, reason, path)
    else:
        logger.warning("the compiled %s is not shipped: %s (%s)", program_name, reason, path)
    return CompileVerdict(before.score, after.score, differs, path, registered, before.degenerate, after.degenerate)


def validation_score(
    session: Settings, name: str, program: dspy.Module, valset: list[dspy.Example],
    score: Callable[[dspy.Example, dspy.Prediction], float],
) -> Validation:
    """The mean of `score` over `valset`, as the optimizer scores it, and the predictions' degenerate outputs; one
    MLflow child run named `<name>-on-val`."""
    with tracked_run(f"{name}-on-val", nested=True):
        scored, usage = evaluate_program(program, valset, score, model=session.task, num_threads=session.num_threads)
        validation = Validation(sum(value for _, _, value in scored) / len(scored), degenerate_outputs(program, scored))
        log_metrics({"val_score": validation.score, "degenerate_outputs": validation.degenerate, **usage.as_metrics()})
    return validation


def differs_from(compiled: dspy.Module, uncompiled: dspy.Module) -> bool:
    """Whether any predictor's instructions or demos changed."""
    return any(
        after.signature.instructions != before.signature.instructions or after.demos != before.demos
        for (_, after), (_, before) in zip(compiled.named_predictors(), uncompiled.named_predictors(), strict=True)
    )
