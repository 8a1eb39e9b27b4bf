"""Every evaluation counts degenerate outputs: text that parsed but is empty, a placeholder or the field's own name."""

import dspy
from dspy.utils import DummyLM

from prefcraft.engine.evaluation import StepCost, degenerate_outputs, evaluate_program
from prefcraft.engine.usage import LMUsage
from prefcraft.settings import ModelSettings


class AnswerAndRate(dspy.Signature):
    """Answer and rate the question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()
    rating: int = dspy.OutputField()


def test_an_evaluation_counts_the_degenerate_text_outputs_of_its_predictions():
    program = dspy.Predict(AnswerAndRate)
    examples = [dspy.Example(question=f"q{n}").with_inputs("question") for n in range(4)]
    replies = [{"answer": "{answer}", "rating": "1"}, {"answer": "Paris", "rating": "2"},
               {"answer": " Answer ", "rating": "0"}, {"answer": "It depends on the season.", "rating": "3"}]
    with dspy.context(lm=DummyLM(replies)):
        results, _ = evaluate_program(program, examples, lambda example, prediction: 1.0, model=ModelSettings(),
                                      num_threads=1, progress=False)
    assert [prediction.answer for _, prediction, _ in results] == ["{answer}", "Paris", "Answer",
                                                                    "It depends on the season."]
    assert degenerate_outputs(program, results) == 2  # the rating is typed: never counted as text
    assert degenerate_outputs(program, [(examples[0], None, 0.0)]) == 0  # a failed call is a failure, not text


def test_a_step_reports_its_degenerate_outputs_beside_its_failures():
    cost = StepCost(LMUsage(calls=4), seconds=1.0, failures=1, degenerate=2)
    metrics = cost.as_metrics("infer_")
    assert metrics["infer_degenerate_outputs"] == 2 and metrics["infer_failures"] == 1
    assert StepCost(LMUsage(), 0.0, 0).as_metrics("")["degenerate_outputs"] == 0  # steps built before it was counted
