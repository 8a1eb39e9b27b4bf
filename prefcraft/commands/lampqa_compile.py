"""`prefcraft lampqa compile`: MIPROv2 over PlanPers (planner + answerer), the aspect score as its metric.

MIPROv2 compiles on the train split and selects on the validation split. The compiled program is kept only if it
differs from the uncompiled one and beats it on validation (both scored here with the same metric on the same
questions; DSPy's cache answers the calls MIPROv2 already made). A winner is saved with its metadata and, when written
inside the compiled package, registered as the shipped `lampqa_planner` for the task model; a loser is saved beside the
results as `lampqa_planner.rejected.json` and never shipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import dspy

from prefcraft.commands.lampqa import RUNS, LampQAData, RetrievalConfig
from prefcraft.errors import ConfigError
from prefcraft.evaluation import evaluate_program
from prefcraft.lm import build_lm
from prefcraft.loaders.lampqa import SUFFIXES
from prefcraft.optimizers.artifacts import register_compiled, save_compiled
from prefcraft.optimizers.lampqa import PROGRAM_NAME, AspectGrader, compile_planpers
from prefcraft.optimizers.prompt_optimizer import OptimizerConfig
from prefcraft.programs.lampqa import PlanPers
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, log_file, log_metrics, model_params, start_tracking, tracked_run
from prefcraft.usage import LMUsage, metered

logger = logging.getLogger(__name__)

METRIC = "LaMP-QA aspect score: Σ judge scores (0/1/2 per gold aspect) / (2 · #aspects), judge on the judge model"


@dataclass
class CompileJob:
    output: Path = RUNS / f"{PROGRAM_NAME}.json"
    data: LampQAData = field(default_factory=LampQAData)
    config: OptimizerConfig = field(default_factory=OptimizerConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    output_dir: Path = RUNS


@dataclass
class CompileOutcome:
    train: int
    val: int
    uncompiled_score: float
    compiled_score: float
    differs: bool
    won: bool
    registered: bool
    path: Path
    usage: LMUsage


def run_lampqa_compile(settings: Settings, job: CompileJob, emit: Callable[[str], None]) -> CompileOutcome:
    from prefcraft.lampqa_report import format_compile

    if Path(job.data.source).suffix in SUFFIXES:
        raise ConfigError("compiling needs the train and validation splits, not one file",
                          "pass a folder laid out as <config>/<split>.jsonl, or the hub dataset's name")
    trainset = [question.example() for question in job.data.load("train").questions]
    valset = [question.example() for question in job.data.load("validation").questions]
    with model_session(settings) as session:
        start_tracking(session)
        outcome = compile_and_select(session, job, trainset, valset)
    emit(format_compile(outcome))
    return outcome


def compile_and_select(
    session: Settings, job: CompileJob, trainset: list[dspy.Example], valset: list[dspy.Example]
) -> CompileOutcome:
    """MIPROv2, then the uncompiled program scored on the same validation set; save (and ship) only a winner."""
    grader = AspectGrader(lambda: lm_context(session, "judge"))
    digest = data_digest(job.data.source)
    params = {"program": PROGRAM_NAME, "data": str(job.data.source), "data_digest": digest, "train": len(trainset),
              "val": len(valset), **job.config.as_params(), **asdict(job.retrieval), **model_params(session)}
    with tracked_run("lampqa-compile", params), lm_context(session, "task"), metered() as meter:
        compiled = compile_planpers(trainset=trainset, valset=valset, grader=grader.grader, config=job.config,
                                    retriever=job.retrieval.build(), prompt_model=build_lm(session.model_for("prompt")),
                                    task_model=build_lm(session.task))
        uncompiled = PlanPers(job.retrieval.build())
        uncompiled_score = _validation_score(session, "uncompiled", uncompiled, valset, grader)
        compiled_score = _validation_score(session, "compiled", compiled, valset, grader)
        differs = differs_from(compiled, uncompiled)
        won = differs and compiled_score > uncompiled_score
        path = job.output if won else job.output_dir / f"{PROGRAM_NAME}.rejected.json"
        save_compiled(compiled, path, program_name=PROGRAM_NAME, model=session.task.model, k=job.retrieval.k,
                      retriever=job.retrieval.kind, data=str(job.data.source), data_digest=digest,
                      split={"train": len(trainset), "val": len(valset), "max_questions": job.data.max_questions},
                      score={"val_compiled": compiled_score, "val_uncompiled": uncompiled_score}, metric=METRIC,
                      optimizer=job.config.as_params())
        registered = won and register_compiled(PROGRAM_NAME, session.task.model, path)
        log_metrics({"val_compiled": compiled_score, "val_uncompiled": uncompiled_score, "won": float(won)})
        log_file(path)
    if not won:
        logger.warning("the compiled PlanPers did not beat the uncompiled one on validation; not shipped")
    return CompileOutcome(len(trainset), len(valset), uncompiled_score, compiled_score, differs, won, registered, path,
                          meter.usage)


def differs_from(compiled: dspy.Module, uncompiled: dspy.Module) -> bool:
    """Whether any predictor's instructions changed or it gained demos."""
    return any(after.signature.instructions != before.signature.instructions or after.demos
               for (_, after), (_, before) in zip(compiled.named_predictors(), uncompiled.named_predictors(),
                                                  strict=True))


def _validation_score(
    session: Settings, name: str, program: dspy.Module, valset: list[dspy.Example], grader: AspectGrader
) -> float:
    """Mean aspect score on the validation questions, as MIPROv2 scores it; a child run."""
    with tracked_run(f"{name}-on-val", nested=True):
        scored, usage = evaluate_program(program, valset, grader.score, model=session.task,
                                         num_threads=session.num_threads)
        score = sum(score for _, _, score in scored) / len(scored)
        log_metrics({"val_score": score, **usage.as_metrics()})
    return score
