"""Running a program over examples with dspy.Evaluate; judging preference pairs in both orders into Judgments."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import dspy

from prefcraft.engine.lm import EndpointFaults, check_reachable
from prefcraft.engine.session import lm_context
from prefcraft.engine.usage import LMUsage, metered
from prefcraft.loaders.personal_reward_bench import PreferencePair, judge_set
from prefcraft.metrics.degenerate import count_degenerate, text_output_fields
from prefcraft.metrics.pairwise import Judgment, preference_correct
from prefcraft.settings import ModelSettings, Role, Settings

EVALUATION_CHUNK = 1_000
"""Items an evaluation that writes rows as it goes runs at a time (`in_chunks`): its predictions live until the chunk's
rows are written, so memory follows the chunk, not the run. At 32 threads, the threads that wait on a chunk's slowest
items stay a small share of it."""
T = TypeVar("T")
NEVER_STOP = 2**31  # DSPy counts an example twice when it resubmits a straggler, so no count of examples is enough


def evaluate_program(
    program: dspy.Module,
    examples: Sequence[dspy.Example],
    metric: Callable[[dspy.Example, dspy.Prediction], float],
    *,
    model: ModelSettings,
    num_threads: int,
    progress: bool = True,
) -> tuple[list[tuple[dspy.Example, dspy.Prediction | None, float]], LMUsage]:
    """`program` on every example with dspy.Evaluate: (example, prediction, score) in order, and the LM usage.

    A failed call (or parse) scores 0 with prediction None, and never stops the run; if any call failed and the
    server no longer answers (or a call timed out), raises that error instead of reporting zeros. The first example
    runs alone before the others: calls of one program share its prompt prefix, and calls that start together with a
    prefix the server has not cached yet each evaluate it in full. Evaluate then takes that first answer from DSPy's
    cache.
    Every component's evaluation goes through here; the metric may itself call models (graders, judges).
    """
    if not examples:
        return [], LMUsage()
    evaluate = dspy.Evaluate(
        devset=list(examples),
        metric=metric,
        num_threads=num_threads,
        display_progress=progress,
        max_errors=NEVER_STOP,  # a failed call is a counted failure, not a reason to stop
        failure_score=0.0,
        provide_traceback=False,
    )
    # No trace: DSPy would append every call of the evaluation to one list (its last 10,000 calls, each keeping its
    # module, inputs and prediction) that lives until the evaluation ends.
    with metered() as meter, dspy.context(trace=None):
        if num_threads > 1:
            _warm_prefix(program, examples[0])
        # MLflow's autologging would log DSPy's mean score as `eval` on the command's run, beside the same result
        # under the name the report gives it (and as 0 for the steps of a pipeline that the next step scores)
        with dspy.context(callbacks=_callbacks_inside_evaluate()):
            result = evaluate(program, callback_metadata={"disable_logging": True})
    results = [(example, prediction or None, float(score)) for example, prediction, score in result.results]
    if any(prediction is None for _, prediction, _ in results):
        check_reachable(model)
        if (fault := EndpointFaults.error()) is not None:
            raise fault  # a call timed out: the failed items are the server's, not their own; nothing is written
    return results, meter.usage


def _callbacks_inside_evaluate() -> list[Any]:
    """DSPy's callbacks in force, less MLflow autologging's when it traces no evaluation (prefcraft never asks it to:
    `tracking.runs.start_tracking`): with its eval logging turned off, it would do nothing inside dspy.Evaluate but be
    handed the arguments of every module, adapter and LM call, which DSPy builds for any callback in force (about a
    tenth of a call's client CPU: benchmarks/client_overhead.py)."""
    callbacks = dspy.settings.callbacks
    mlflow_callback = sys.modules.get("mlflow.dspy.callback")  # imported by autologging, if it is on
    if mlflow_callback is None:
        return callbacks
    from mlflow.utils.autologging_utils import get_autologging_config

    if get_autologging_config("dspy", "log_traces", False) and get_autologging_config(
            "dspy", "log_traces_from_eval", False):
        return callbacks
    return [callback for callback in callbacks if not isinstance(callback, mlflow_callback.MlflowCallback)]


def in_chunks(items: Sequence[T], size: int = EVALUATION_CHUNK) -> Iterator[Sequence[T]]:
    """`items` in consecutive slices of at most `size`: the unit a long evaluation runs, writes and forgets."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def degenerate_outputs(
    program: dspy.Module, results: Sequence[tuple[dspy.Example, dspy.Prediction | None, float]]
) -> int:
    """How many free-text outputs in `evaluate_program`'s results are degenerate (empty, a template placeholder, the
    field's own name): the text output fields of the program's predictors, wherever the program returns them. Such an
    output parsed, so it is no failure, and graders have scored it well: every evaluation counts it apart."""
    fields = sorted({name for predictor in program.predictors() for name in text_output_fields(predictor.signature)})
    return count_degenerate((prediction for _, prediction, _ in results), fields)


def judge_pairs(
    program: dspy.Module,
    pairs: Sequence[PreferencePair],
    *,
    model: ModelSettings,
    num_threads: int,
    progress: bool = True,
) -> tuple[list[Judgment], LMUsage]:
    """Every pair judged in both orders. An example whose call failed counts as wrong (predicted None)."""
    results, usage = evaluate_program(program, judge_set(pairs), preference_correct, model=model,
                                      num_threads=num_threads, progress=progress)
    judgments = [
        Judgment(
            user_id=example.user_id,
            pair_id=example.pair_id,
            order=example.order,
            predicted=getattr(prediction, "preference", None),
            correct=bool(score),
        )
        for example, prediction, score in results
    ]
    return judgments, usage


def _warm_prefix(program: dspy.Module, example: dspy.Example) -> None:
    try:
        program(**example.inputs())
    except Exception:
        pass  # Evaluate makes the same call next, and counts its failure


@dataclass
class StepCost:
    """What one step of a pipeline cost over all its items: LM requests and tokens (DSPy cache hits are free), wall
    seconds, the items whose call or parse failed, and the degenerate outputs among those that parsed."""

    usage: LMUsage
    seconds: float
    failures: int
    degenerate: int = 0

    def as_metrics(self, prefix: str) -> dict[str, float]:
        return {**self.usage.as_metrics(prefix), f"{prefix}seconds": self.seconds, f"{prefix}failures": self.failures,
                f"{prefix}degenerate_outputs": self.degenerate}

    def __add__(self, other: StepCost) -> StepCost:
        return StepCost(self.usage + other.usage, self.seconds + other.seconds, self.failures + other.failures,
                        self.degenerate + other.degenerate)


def run_pipeline_step(
    session: Settings, program: dspy.Module, examples: Sequence[dspy.Example],
    metric: Callable[[dspy.Example, dspy.Prediction], float], role: Role,
) -> tuple[list[tuple[dspy.Example, dspy.Prediction | None, float]], StepCost]:
    """One step of a pipeline over every example, in parallel, on the model of `role`, with what it cost."""
    started = time.perf_counter()
    with lm_context(session, role):
        results, usage = evaluate_program(program, examples, metric, model=session.model_for(role),
                                          num_threads=session.threads)
    failures = sum(prediction is None for _, prediction, _ in results)
    return results, StepCost(usage, time.perf_counter() - started, failures, degenerate_outputs(program, results))
