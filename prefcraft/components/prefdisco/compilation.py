"""`prefcraft prefdisco compile`: MIPROv2 over the question asker, PrefAlign of its answer gated by correctness.

MIPROv2 compiles on the train scenarios and selects on the validation scenarios (split by problem). The compiled asker
is kept only if it differs from the uncompiled one and beats it on validation, both scored here with the same metric
on the same scenarios (DSPy's cache answers the calls MIPROv2 already made). A winner is saved with its metadata and,
when written inside the compiled package, registered as the shipped asker for the task model; a loser is saved beside
the results as `prefdisco_asker.rejected.json` and never shipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from prefcraft.compile_gate import MLflowTracker, Tracker, keep_if_better, logged_usage
from prefcraft.components.prefdisco.data import Scenario
from prefcraft.components.prefdisco.evaluation import RUNS, PrefDiscoData, select_scenarios, simulated_users
from prefcraft.components.prefdisco.metrics import GatedPrefAlign
from prefcraft.components.prefdisco.report import format_compile
from prefcraft.errors import ConfigError
from prefcraft.lm import build_lm
from prefcraft.optimizers.compile_selection import CompileOutcome
from prefcraft.optimizers.demos import keep_prompt_demos
from prefcraft.optimizers.prefdisco import PROGRAM_NAME, asker_example
from prefcraft.optimizers.prompt_optimizer import MIPROv2Config, OptimizerConfig, PromptOptimizer
from prefcraft.programs.prefdisco import DEFAULT_MAX_TURNS, QuestionAsker
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, model_params, start_tracking


@dataclass
class CompileJob:
    output: Path
    data: PrefDiscoData = field(default_factory=PrefDiscoData)
    max_turns: int = DEFAULT_MAX_TURNS
    config: OptimizerConfig = field(default_factory=MIPROv2Config)
    output_dir: Path = RUNS


def run_prefdisco_compile(settings: Settings, job: CompileJob, emit: Callable[[str], None]) -> CompileOutcome:
    train, val = select_scenarios(job.data, "train"), select_scenarios(job.data, "val")
    if not train or not val:
        raise ConfigError("compiling needs train and validation scenarios", "check --val-share / --test-share")
    with model_session(settings) as session:
        start_tracking(session)
        outcome = compile_and_select(session, job, train, val, MLflowTracker())
    emit(format_compile(outcome))
    return outcome


def compile_and_select(session: Settings, job: CompileJob, train: Sequence[Scenario], val: Sequence[Scenario],
                       tracker: Tracker) -> CompileOutcome:
    """The optimizer over a new asker's two predictors (the turn decision and the answer), then `keep_if_better`: save
    (and ship) only a winner."""
    metric = GatedPrefAlign({s.scenario_id: s for s in [*train, *val]}, partial(lm_context, session, "judge"))
    trainset = [asker_example(s, u) for s, u in zip(train, simulated_users(session, train), strict=True)]
    valset = [asker_example(s, u) for s, u in zip(val, simulated_users(session, val), strict=True)]
    digest = data_digest(job.data.source)
    params = {"program": PROGRAM_NAME, "data": str(job.data.source), "data_digest": digest, "train": len(train),
              "val": len(val), "max_turns": job.max_turns, **job.config.as_params(), **model_params(session)}
    with tracker.run("prefdisco-compile", params), lm_context(session, "task"), logged_usage(tracker) as meter:
        optimizer = PromptOptimizer(metric, job.config, prompt_model=build_lm(session.model_for("prompt")),
                                    task_model=build_lm(session.task))
        compiled = optimizer.compile(QuestionAsker(job.max_turns), trainset=trainset, valset=valset)
        verdict = keep_if_better(
            session, tracker, compiled=keep_prompt_demos(compiled), uncompiled=QuestionAsker(job.max_turns),
            valset=valset, score=metric, program_name=PROGRAM_NAME, output=job.output, rejected_dir=job.output_dir,
            data=str(job.data.source), data_digest=digest, max_turns=job.max_turns,
            split={"val_share": job.data.val_share, "test_share": job.data.test_share,
                   "train": [s.scenario_id for s in train], "val": [s.scenario_id for s in val]},
            metric="PrefAlign / 5 of the final answer when the correctness judge accepts it, else 0",
            optimizer=job.config.as_params(),
        )  # fmt: skip
    return CompileOutcome(len(train), len(val), verdict, meter.usage, job.config.name)
