"""`prefcraft cupid compile`: MIPROv2 over CUPID's preference inferrer, F1 (decomposer + matcher) as its metric.

The instances are split by persona; MIPROv2 compiles on the train personas and selects on the validation personas.
The compiled program is kept only if it differs from the uncompiled one and beats it on validation (both scored here
with the same metric on the same instances; DSPy's cache answers the calls MIPROv2 already made). A
winner is saved with its metadata and, when written inside the compiled package, registered as the shipped inferrer
for the task model; a loser is saved beside the results as `cupid_inferrer.rejected.json` and never shipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dspy

from prefcraft.compile_gate import MLflowTracker, Tracker, keep_if_better, logged_usage
from prefcraft.components.cupid.evaluation import RUNS, CupidData, select_instances
from prefcraft.components.cupid.metrics import PreferenceF1
from prefcraft.components.cupid.report import format_compile
from prefcraft.components.cupid.results import CupidCompileOutcome
from prefcraft.errors import ConfigError
from prefcraft.lm import build_lm
from prefcraft.optimizers.cupid import PROGRAM_NAME, labeled
from prefcraft.optimizers.demos import keep_prompt_demos
from prefcraft.optimizers.prompt_optimizer import MIPROv2Config, OptimizerConfig, PromptOptimizer
from prefcraft.programs.cupid import InferrerVariant, PreferenceInferrer, PreferenceMatch
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, model_params, start_tracking


@dataclass
class CompileJob:
    output: Path
    data: CupidData = field(default_factory=CupidData)
    variant: InferrerVariant = "all"
    config: OptimizerConfig = field(default_factory=MIPROv2Config)
    output_dir: Path = RUNS


def run_cupid_compile(settings: Settings, job: CompileJob, emit: Callable[[str], None]) -> CupidCompileOutcome:
    train, _ = select_instances(job.data, "train")
    val, _ = select_instances(job.data, "val")
    if not train or not val:
        raise ConfigError("compiling needs train and validation personas", "check --val-personas / --test-personas")
    with model_session(settings) as session:
        start_tracking(session)
        outcome = compile_and_select(session, job, [i.example() for i in train], [i.example() for i in val],
                                     MLflowTracker())
    emit(format_compile(outcome))
    return outcome


def compile_and_select(
    session: Settings, job: CompileJob, trainset: list[dspy.Example], valset: list[dspy.Example], tracker: Tracker
) -> CupidCompileOutcome:
    """The optimizer over a new inferrer of the job's variant, then `keep_if_better`: save (and ship) only a winner."""
    metric = PreferenceF1(PreferenceMatch(), lambda: lm_context(session, "judge"))
    params = {"program": PROGRAM_NAME, "variant": job.variant, "data": str(job.data.source),
              "data_digest": data_digest(job.data.source), "train": len(trainset), "val": len(valset),
              **job.config.as_params(), **model_params(session)}
    with tracker.run("cupid-compile", params), lm_context(session, "task"), logged_usage(tracker) as meter:
        optimizer = PromptOptimizer(metric, job.config, prompt_model=build_lm(session.model_for("prompt")),
                                    task_model=build_lm(session.task))
        compiled = optimizer.compile(PreferenceInferrer(job.variant), trainset=[labeled(e) for e in trainset],
                                     valset=valset)
        verdict = keep_if_better(
            session, tracker, compiled=keep_prompt_demos(compiled), uncompiled=PreferenceInferrer(job.variant),
            valset=valset, score=metric, program_name=PROGRAM_NAME, output=job.output, rejected_dir=job.output_dir,
            variant=job.variant, data=str(job.data.source), data_digest=data_digest(job.data.source),
            split={"val_personas": job.data.val_personas, "test_personas": job.data.test_personas,
                   "train": len(trainset), "val": len(valset)},
            metric="per-instance F1 of the preference match (decomposer + matcher on the judge model)",
            optimizer=job.config.as_params(),
        )  # fmt: skip
    return CupidCompileOutcome(len(trainset), len(valset), verdict, meter.usage, job.config.name, job.variant)
