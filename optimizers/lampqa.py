"""Compile LaMP-QA's PlanPers pipeline (planner + answerer) with MIPROv2 against the aspect score.

The metric is the paper's: `AspectJudge` scores the answer on each gold aspect of the question, on the grader model
(`grader` enters its context), and the question's score is Σ / (2 · #aspects). Training questions' gold reaches the
optimizer only through this metric (and MIPROv2's summary of the train set for its proposer), as the paper trains its
planner on the train split's aspects; the programs themselves never read a narrative or an aspect. No example carries
a plan or an answer, so a labeled demo can never reach a prompt: only bootstrapped demos are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import dspy

from prefcraft.components.lampqa.metrics import question_score
from prefcraft.optimizers.artifacts import load_compiled, read_metadata
from prefcraft.optimizers.demos import keep_prompt_demos
from prefcraft.optimizers.prompt_optimizer import Metric, OptimizerConfig, compile_program, thresholded
from prefcraft.programs.lampqa import DEFAULT_K, AspectJudge, BM25Retriever, PlanPers, Retriever

PROGRAM_NAME = "lampqa_planner"
GraderContext = Callable[[], AbstractContextManager[Any]]


class AspectGrader:
    """The aspect scores of a response to an example's question, judged on the grader model."""

    def __init__(self, grader: GraderContext):
        self.grader = grader
        self.judge = AspectJudge()

    def __call__(self, example: dspy.Example, response: str) -> list[int | None]:
        with self.grader():
            return self.judge(question=example.question, details=example.narrative, response=response,
                              aspects=example.rubric_aspects).scores

    def score(self, example: dspy.Example, prediction: dspy.Prediction) -> float:
        return question_score(self(example, prediction.answer))


def aspect_metric(grader: GraderContext, threshold: float) -> Metric:
    """MIPROv2's metric: the question's aspect score, or whether it reaches `threshold` when bootstrapping demos."""
    return thresholded(AspectGrader(grader).score, threshold)


def compile_planpers(
    *,
    trainset: Sequence[dspy.Example],
    valset: Sequence[dspy.Example],
    grader: GraderContext,
    config: OptimizerConfig,
    retriever: Retriever | None = None,
    post_chars: int | None = None,
    prompt_model: dspy.LM | None = None,
    task_model: dspy.LM | None = None,
) -> PlanPers:
    """MIPROv2 over a fresh PlanPers (both predictors); the result carries `score` and `trial_logs` from DSPy."""
    compiled = compile_program(
        PlanPers(retriever, post_chars), trainset=trainset, valset=valset,
        metric=aspect_metric(grader, config.metric_threshold), config=config, prompt_model=prompt_model,
        task_model=task_model,
    )
    return keep_prompt_demos(compiled)


def load_planpers(
    path: Path, retriever: Retriever | None = None, post_chars: int | None = None
) -> tuple[PlanPers, dict[str, Any]]:
    """A compiled PlanPers and its metadata; without a retriever, BM25 with the k it was compiled with."""
    metadata = read_metadata(path)
    program = PlanPers(retriever or BM25Retriever(metadata.get("k", DEFAULT_K)), post_chars)
    load_compiled(program, path, program_name=PROGRAM_NAME)
    return program, metadata
