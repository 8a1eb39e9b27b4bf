"""Compile CUPID's preference inferrer with MIPROv2, its metric the F1 of the inferred preference against the gold one.

The metric is the paper's preference match on one instance: `PreferenceMatch` decomposes the inferred preference and
runs the matcher both ways, on the grader model (`grader` enters its context), and the instance's F1 is the score.
MIPROv2 averages per-instance F1 over the validation set; reports pool the matched counts instead (micro F1).

DSPy uses a training example itself as a labeled demo, and the prompt shows only the predictor's fields: the examples
handed to the optimizer carry the gold preference under the inferrer's output name too, or a labeled demo would reach
the prompt without its answer (and the adapter would leave it out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import dspy

from prefcraft.components.cupid.metrics import ChecklistMatch
from prefcraft.optimizers.artifacts import load_compiled, read_metadata
from prefcraft.optimizers.demos import keep_prompt_demos
from prefcraft.optimizers.prompt_optimizer import Metric, OptimizerConfig, compile_program, thresholded
from prefcraft.programs.cupid import InferrerVariant, PreferenceInferrer, PreferenceMatch

PROGRAM_NAME = "cupid_inferrer"
GraderContext = Callable[[], AbstractContextManager[Any]]


class InferenceGrader:
    """The preference match of a prediction against an example's gold preference and checklist, on the grader model."""

    def __init__(self, grader: GraderContext):
        self.grader = grader
        self.match = PreferenceMatch()

    def __call__(self, example: dspy.Example, prediction: dspy.Prediction) -> ChecklistMatch:
        with self.grader():
            return self.match(preference=prediction.preference, gold_preference=example.gold_preference,
                              gold_checklist=example.gold_checklist).match

    def f1(self, example: dspy.Example, prediction: dspy.Prediction) -> float:
        return self(example, prediction).f1


def inference_metric(grader: GraderContext, threshold: float) -> Metric:
    """MIPROv2's metric: the instance's F1, or whether it reaches `threshold` when bootstrapping demos."""
    return thresholded(InferenceGrader(grader).f1, threshold)


def compile_inferrer(
    variant: InferrerVariant,
    *,
    trainset: Sequence[dspy.Example],
    valset: Sequence[dspy.Example],
    grader: GraderContext,
    config: OptimizerConfig,
    prompt_model: dspy.LM | None = None,
    task_model: dspy.LM | None = None,
) -> PreferenceInferrer:
    """MIPROv2 over a fresh inferrer of `variant`; the returned program carries `score` and `trial_logs` from DSPy."""
    compiled = compile_program(
        PreferenceInferrer(variant), trainset=[labeled(example) for example in trainset], valset=valset,
        metric=inference_metric(grader, config.metric_threshold), config=config,
        prompt_model=prompt_model, task_model=task_model,
    )
    return keep_prompt_demos(compiled)


def labeled(example: dspy.Example) -> dspy.Example:
    """A training example that is also a complete demo of the inferrer: its gold preference named `preference`."""
    return example.copy(preference=example.gold_preference)


def load_inferrer(path: Path) -> tuple[PreferenceInferrer, dict[str, Any]]:
    """A compiled inferrer (its variant read from the file's metadata) and that metadata."""
    metadata = read_metadata(path)
    inferrer = PreferenceInferrer(metadata.get("variant", "relevant"))
    load_compiled(inferrer, path, program_name=PROGRAM_NAME)
    return inferrer, metadata
