"""A compile ships only when it wins: the verdict on the compiled and the uncompiled program, scored on the same
validation set with the compile's own metric. Pure: the runner scores, saves, registers and logs
(`prefcraft.optimizers.compile_gate`).

A compiled program that changed nothing, gave any degenerate output on validation (empty, a template placeholder, the
field's own name), or did not beat the uncompiled one, is refused. Any degenerate output refuses a compile, even when
the uncompiled program gave as many: a shipped program becomes the default of every command on its model, while
refusing it leaves the uncompiled program in use, which is no change. Graders have scored degenerate outputs well (a
matcher gave the literal word "preference" F1 85.7), so a higher score does not outweigh them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dspy

from prefcraft.engine.usage import LMUsage


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
    model_uri: str | None = None  # the MLflow model it was logged as: the registered alias when it won

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


def format_verdict(verdict: CompileVerdict, score_name: str) -> str:
    """Whether a compile ships, and why: its validation score against the uncompiled program's."""
    if verdict.registered:
        outcome = "shipped (registered in compiled/index.json)"
    elif verdict.won:
        outcome = "saved (outside compiled/, not registered)"
    else:
        outcome = f"saved, NOT shipped (no default, not the MLflow champion): {verdict.reason}"
    return (f"  validation {score_name}: uncompiled {100 * verdict.uncompiled_score:.1f}%, compiled "
            f"{100 * verdict.compiled_score:.1f}%; degenerate outputs: uncompiled {verdict.uncompiled_degenerate}, "
            f"compiled {verdict.compiled_degenerate}\n  {verdict.path}: {outcome}"
            + (f"\n  MLflow model: {verdict.model_uri}" if verdict.model_uri else ""))


@dataclass(frozen=True)
class CompileOutcome:
    """What a component's compile command did: its data sizes, the verdict, the LM usage and the optimizer's name."""

    train: int
    val: int
    verdict: CompileVerdict
    usage: LMUsage
    optimizer: str


def differs_from(compiled: dspy.Module, uncompiled: dspy.Module) -> bool:
    """Whether any predictor's instructions or demos changed."""
    return any(
        after.signature.instructions != before.signature.instructions or after.demos != before.demos
        for (_, after), (_, before) in zip(compiled.named_predictors(), uncompiled.named_predictors(), strict=True)
    )
