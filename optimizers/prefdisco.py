"""Compiling PrefDisco's question asker with MIPROv2: PrefAlign of the final answer, gated by correctness.

Examples carry only the asker's inputs (the problem and the `SimulatedUser`) and the scenario id; the scorer looks the
scenario's rubric and gold answer up by id, so neither the hidden profile nor the gold answer is a field that MIPROv2
could show the asker (as a labelled demo) or the proposer. With no gold turn or answer, a labelled demo never reaches
a prompt: only bootstrapped demos are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import dspy

from prefcraft.components.prefdisco.data import Scenario
from prefcraft.components.prefdisco.metrics import MAX_GRADE, pref_align
from prefcraft.optimizers.demos import keep_prompt_demos
from prefcraft.optimizers.prompt_optimizer import OptimizerConfig, compile_program, thresholded
from prefcraft.programs.prefdisco import QuestionAsker, RubricGrader, SimulatedUser

PROGRAM_NAME = "prefdisco_asker"


def asker_example(scenario: Scenario, user: SimulatedUser) -> dspy.Example:
    return dspy.Example(scenario_id=scenario.scenario_id, problem=scenario.question,
                        user=user).with_inputs("problem", "user")


def grading_example(scenario: Scenario, response: str, final_answer: str) -> dspy.Example:
    """What the grader reads for one response: the response with its final answer, every criterion, the gold."""
    return dspy.Example(scenario_id=scenario.scenario_id, problem=scenario.question,
                        response=f"{response}\nFinal answer: {final_answer}",
                        criteria=[criterion.grading_text() for criterion in scenario.criteria],
                        reference_answer=scenario.answer, weights=scenario.weights,
                        ).with_inputs("problem", "response", "criteria", "reference_answer")


def grade_pref_align(example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float:
    """The grader's metric: PrefAlign (1-5) from its grades and the example's weights."""
    return pref_align(example.weights, prediction.grades)


class GatedPrefAlign:
    """The compile metric: PrefAlign / 5 of the asker's final answer when the answer is correct, else 0.

    Grading runs in `judge_context` (the judge model), one call per criterion plus one correctness call.
    """

    def __init__(self, scenarios: Mapping[str, Scenario], judge_context: Callable[[], AbstractContextManager[Any]]):
        self.scenarios = dict(scenarios)
        self.judge_context = judge_context
        self.grader = RubricGrader()

    def __call__(self, example: dspy.Example, prediction: dspy.Prediction) -> float:
        graded = grading_example(self.scenarios[example.scenario_id], prediction.response, prediction.final_answer)
        with self.judge_context():
            grades = self.grader(**graded.inputs())
        return grade_pref_align(graded, grades) / MAX_GRADE if grades.correct else 0.0


def compile_asker(
    asker: QuestionAsker,
    *,
    trainset: Sequence[dspy.Example],
    valset: Sequence[dspy.Example],
    score: GatedPrefAlign,
    config: OptimizerConfig,
    prompt_model: dspy.LM | None = None,
    task_model: dspy.LM | None = None,
) -> dspy.Module:
    """The optimizer (MIPROv2 by default) over the asker's two predictors (the turn decision and the answer)."""
    compiled = compile_program(asker, trainset=trainset, valset=valset,
                               metric=thresholded(score, config.metric_threshold), config=config,
                               prompt_model=prompt_model, task_model=task_model)
    return keep_prompt_demos(compiled)

