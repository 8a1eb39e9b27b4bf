"""`prefcraft cupid compile`: MIPROv2 over CUPID's preference inferrer, F1 (decomposer + matcher) as its metric.

The instances are split by persona; MIPROv2 compiles on the train personas and selects on the validation personas.
The compiled program is kept only if it differs from the uncompiled one and beats it on validation (both scored here
with the same metric on the same instances; DSPy's cache answers the calls MIPROv2 already made). A
winner is saved with its metadata and, when written inside the compiled package, registered as the shipped inferrer
for the task model; a loser is saved beside the results as `cupid_inferrer.rejected.json` and never shipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dspy

from prefcraft.commands.cupid import RUNS, CupidData, select_instances
from prefcraft.errors import ConfigError
from prefcraft.evaluation import evaluate_program
from prefcraft.lm import build_lm
from prefcraft.optimizers.artifacts import register_compiled, save_compiled
from prefcraft.optimizers.cupid import PROGRAM_NAME, InferenceGrader, compile_inferrer
from prefcraft.optimizers.prompt_optimizer import OptimizerConfig
from prefcraft.programs.cupid import InferrerVariant, PreferenceInferrer
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, log_file, log_metrics, model_params, start_tracking, tracked_run
from prefcraft.usage import LMUsage, metered

logger = logging.getLogger(__name__)


@dataclass
class CompileJob:
    output: Path
    data: CupidData = field(default_factory=CupidData)
    variant: InferrerVariant = "all"
    config: OptimizerConfig = field(default_factory=OptimizerConfig)
    output_dir: Path = RUNS


@dataclass
class CompileOutcome:
    variant: str
    train: int
    val: int
    uncompiled_score: float
    compiled_score: float
    differs: bool
    won: bool
    registered: bool
    path: Path
    usage: LMUsage


def run_cupid_compile(settings: Settings, job: CompileJob, emit: Callable[[str], None]) -> CompileOutcome:
    from prefcraft.cupid_report import format_compile

    train, _ = select_instances(job.data, "train")
    val, _ = select_instances(job.data, "val")
    if not train or not val:
        raise ConfigError("compiling needs train and validation personas", "check --val-personas / --test-personas")
    with model_session(settings) as session:
        start_tracking(session)
        outcome = compile_and_select(session, job, [i.example() for i in train], [i.example() for i in val])
    emit(format_compile(outcome))
    return outcome


def compile_and_select(
    session: Settings, job: CompileJob, trainset: list[dspy.Example], valset: list[dspy.Example]
) -> CompileOutcome:
    """MIPROv2, then the uncompiled program scored on the same validation set; save (and ship) only a winner."""
    grader = InferenceGrader(lambda: lm_context(session, "judge"))
    params = {"program": PROGRAM_NAME, "variant": job.variant, "data": str(job.data.source),
              "data_digest": data_digest(job.data.source), "train": len(trainset), "val": len(valset),
              **job.config.as_params(), **model_params(session)}
    with tracked_run("cupid-compile", params), lm_context(session, "task"), metered() as meter:
        compiled = compile_inferrer(job.variant, trainset=trainset, valset=valset, grader=grader.grader,
                                    config=job.config, prompt_model=build_lm(session.model_for("prompt")),
                                    task_model=build_lm(session.task))
        uncompiled = _validation_f1(session, "uncompiled", PreferenceInferrer(job.variant), valset, grader)
        compiled_score = _validation_f1(session, "compiled", compiled, valset, grader)
        differs = _differs(compiled, PreferenceInferrer(job.variant))
        won = differs and compiled_score > uncompiled
        path = job.output if won else job.output_dir / f"{PROGRAM_NAME}.rejected.json"
        save_compiled(compiled, path, program_name=PROGRAM_NAME, model=session.task.model, variant=job.variant,
                      data=str(job.data.source), data_digest=data_digest(job.data.source),
                      split={"val_personas": job.data.val_personas, "test_personas": job.data.test_personas,
                             "train": len(trainset), "val": len(valset)},
                      score={"val_f1_compiled": compiled_score, "val_f1_uncompiled": uncompiled},
                      metric="per-instance F1 of the preference match (decomposer + matcher on the judge model)",
                      optimizer=job.config.as_params())
        registered = won and register_compiled(PROGRAM_NAME, session.task.model, path)
        log_metrics({"val_f1_compiled": compiled_score, "val_f1_uncompiled": uncompiled, "won": float(won)})
        log_file(path)
    if not won:
        logger.warning("the compiled inferrer did not beat the uncompiled one on validation; not shipped")
    return CompileOutcome(job.variant, len(trainset), len(valset), uncompiled, compiled_score, differs, won,
                          registered, path, meter.usage)


def _validation_f1(
    session: Settings, name: str, program: dspy.Module, valset: list[dspy.Example], grader: InferenceGrader
) -> float:
    """Mean per-instance F1 on the validation set, as MIPROv2 scores it; its full evaluations made these calls, so
    DSPy's cache answers them. A child run."""
    with tracked_run(f"{name}-on-val", nested=True):
        scored, usage = evaluate_program(program, valset, grader.f1, model=session.task,
                                         num_threads=session.num_threads)
        score = sum(score for _, _, score in scored) / len(scored)
        log_metrics({"val_f1": score, **usage.as_metrics()})
    return score


def _differs(compiled: dspy.Module, uncompiled: dspy.Module) -> bool:
    """Whether any predictor's instructions or demos changed."""
    for (_, after), (_, before) in zip(compiled.named_predictors(), uncompiled.named_predictors(), strict=True):
        if after.signature.instructions != before.signature.instructions or after.demos:
            return True
    return False
