"""The compile runners' side of the ship gate: score, save, register and log; the verdict itself is
`prefcraft.optimizers.compile_selection.ship_decision`. Every compile reaches it through
`prefcraft.optimizers.compile_step`.

Both programs are scored with the compile's own metric through `evaluate_program` (one child run each); the
optimizer's full evaluations made most of these calls already, so DSPy's cache answers them. Nothing is scored or saved
unless every server still answers: the optimizer scores a failed call as 0 and goes on, so a server that died during
the compile leaves a program chosen on zeros, and its validation here may come from the cache alone. The compiled
program is saved to the requested path whatever its verdict, the verdict in its metadata (`won`, `verdict`): a file
that did not beat its start still loads by path, saying so (`prefcraft.optimizers.artifacts.load_compiled`). Only a
winner is registered: inside the compiled package, as the task model's shipped default; in MLflow, as the `champion`
version of its registered model (`prefcraft.tracking.models`). Either is logged as an MLflow model.

Tracking is passed in as a `prefcraft.tracking.runs.StepTracker` over the step's run: MLflow's in the commands, a
fake's in tests.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import dspy

from prefcraft.engine.evaluation import degenerate_outputs, evaluate_program
from prefcraft.engine.session import check_servers
from prefcraft.optimizers.artifacts import register_compiled, save_compiled
from prefcraft.optimizers.compile_selection import CompileVerdict, Validation, differs_from, ship_decision
from prefcraft.optimizers.prompt_optimizer import Metric
from prefcraft.settings import Settings
from prefcraft.tracking.models import input_example, registered_name
from prefcraft.tracking.runs import StepTracker

logger = logging.getLogger(__name__)


def keep_if_better(
    session: Settings,
    tracker: StepTracker,
    *,
    compiled: dspy.Module,
    uncompiled: dspy.Module,
    valset: list[dspy.Example],
    score: Metric,
    program_name: str,
    output: Path,
    **metadata: Any,
) -> CompileVerdict:
    """Score both programs on `valset`, save the compiled one to `output` with its verdict, register it only when it
    wins, and log the verdict."""
    check_servers(session)
    before = validation_score(session, tracker, "uncompiled", uncompiled, valset, score)
    after = validation_score(session, tracker, "compiled", compiled, valset, score)
    differs = differs_from(compiled, uncompiled)
    won, reason = ship_decision(before, after, differs)
    path = output
    measured = {"val_compiled": after.score, "val_uncompiled": before.score,
                "val_degenerate_compiled": after.degenerate, "val_degenerate_uncompiled": before.degenerate}
    save_compiled(compiled, path, program_name=program_name, model=session.task.model, score=measured, won=won,
                  verdict=reason, **metadata)
    registered = won and register_compiled(program_name, session.task.model, path)
    tracker.log_metrics({**measured, "won": float(won)})
    model_uri = tracker.log_program(
        path, program_name, input_example(valset[0]) if valset else None,
        {"program": program_name, "model": session.task.model, "won": won, "score": measured, **metadata},
        registered_name(program_name, session.task.model) if won else None)
    if won:
        logger.info("the compiled %s wins: %s (%s)", program_name, reason, path)
    else:
        logger.warning("the compiled %s is saved but not shipped: %s (%s)", program_name, reason, path)
    return CompileVerdict(before.score, after.score, differs, path, registered, before.degenerate, after.degenerate,
                          model_uri)


def validation_score(
    session: Settings, tracker: StepTracker, name: str, program: dspy.Module, valset: list[dspy.Example], score: Metric
) -> Validation:
    """The mean of `score` over `valset`, as the optimizer scores it, and the predictions' degenerate outputs; one
    child run named `<name>-on-val`."""
    with tracker.child(f"{name}-on-val"):
        scored, usage = evaluate_program(program, valset, score, model=session.task, num_threads=session.threads)
        validation = Validation(sum(value for _, _, value in scored) / len(scored), degenerate_outputs(program, scored))
        tracker.log_metrics({"val_score": validation.score, "degenerate_outputs": validation.degenerate,
                             **usage.as_metrics()})
    return validation
