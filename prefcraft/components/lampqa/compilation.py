"""`prefcraft lampqa compile`: MIPROv2 over PlanPers (planner + answerer), the aspect score as its metric.

MIPROv2 compiles on the train split and selects on the validation split. The compiled program is kept only if it
differs from the uncompiled one and beats it on validation (both scored here with the same metric on the same
questions; DSPy's cache answers the calls MIPROv2 already made). A winner is saved with its metadata and, when written
inside the compiled package, registered as the shipped `lampqa_planner` for the task model; a loser is saved beside the
results as `lampqa_planner.rejected.json` and never shipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import dspy

from prefcraft.compile_gate import MLflowTracker, Tracker, keep_if_better, logged_usage
from prefcraft.components.lampqa.data import SUFFIXES
from prefcraft.components.lampqa.evaluation import RUNS, LampQAData, RetrievalConfig
from prefcraft.components.lampqa.metrics import AspectScore
from prefcraft.components.lampqa.report import format_compile
from prefcraft.errors import ConfigError
from prefcraft.lm import build_lm
from prefcraft.optimizers.compile_selection import CompileOutcome
from prefcraft.optimizers.demos import keep_prompt_demos
from prefcraft.optimizers.lampqa import PROGRAM_NAME
from prefcraft.optimizers.prompt_optimizer import MIPROv2Config, OptimizerConfig, PromptOptimizer
from prefcraft.programs.lampqa import PlanPers
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, model_params, start_tracking

METRIC = "LaMP-QA aspect score: Σ judge scores (0/1/2 per gold aspect) / (2 · #aspects), judge on the judge model"


@dataclass
class CompileJob:
    output: Path = RUNS / f"{PROGRAM_NAME}.json"
    data: LampQAData = field(default_factory=LampQAData)
    config: OptimizerConfig = field(default_factory=MIPROv2Config)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    output_dir: Path = RUNS


def run_lampqa_compile(settings: Settings, job: CompileJob, emit: Callable[[str], None]) -> CompileOutcome:
    if Path(job.data.source).suffix in SUFFIXES:
        raise ConfigError("compiling needs the train and validation splits, not one file",
                          "pass a folder laid out as <config>/<split>.jsonl, or the hub dataset's name")
    trainset = [question.example() for question in job.data.load("train").questions]
    valset = [question.example() for question in job.data.load("validation").questions]
    with model_session(settings) as session:
        start_tracking(session)
        outcome = compile_and_select(session, job, trainset, valset, MLflowTracker())
    emit(format_compile(outcome))
    return outcome


def compile_and_select(
    session: Settings, job: CompileJob, trainset: list[dspy.Example], valset: list[dspy.Example], tracker: Tracker
) -> CompileOutcome:
    """The optimizer over a new PlanPers (both predictors), then `keep_if_better`: save (and ship) only a winner."""
    metric = AspectScore(lambda: lm_context(session, "judge"))
    digest = data_digest(job.data.source)
    params = {"program": PROGRAM_NAME, "data": str(job.data.source), "data_digest": digest, "train": len(trainset),
              "val": len(valset), **job.config.as_params(), **asdict(job.retrieval), **model_params(session)}
    with tracker.run("lampqa-compile", params), lm_context(session, "task"), logged_usage(tracker) as meter:
        optimizer = PromptOptimizer(metric, job.config, prompt_model=build_lm(session.model_for("prompt")),
                                    task_model=build_lm(session.task))
        compiled = optimizer.compile(PlanPers(job.retrieval.build()), trainset=trainset, valset=valset)
        verdict = keep_if_better(
            session, tracker, compiled=keep_prompt_demos(compiled), uncompiled=PlanPers(job.retrieval.build()),
            valset=valset, score=metric, program_name=PROGRAM_NAME, output=job.output, rejected_dir=job.output_dir,
            k=job.retrieval.k, retriever=job.retrieval.kind, data=str(job.data.source), data_digest=digest,
            split={"train": len(trainset), "val": len(valset), "max_questions": job.data.max_questions},
            metric=METRIC, optimizer=job.config.as_params(),
        )  # fmt: skip
    return CompileOutcome(len(trainset), len(valset), verdict, meter.usage, job.config.name)
