"""Every evaluation counts degenerate outputs: text that parsed but is empty, a placeholder or the field's own name."""

import dspy
import mlflow.utils.autologging_utils
from dspy.utils import DummyLM
from dspy.utils.callback import BaseCallback
from mlflow.dspy.callback import MlflowCallback

from prefcraft.engine.evaluation import StepCost, _callbacks_inside_evaluate, degenerate_outputs, evaluate_program
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


def test_mlflows_callback_is_left_out_of_an_evaluation_that_it_traces_not(monkeypatch):
    """As prefcraft configures autologging: it would only be handed every call's arguments; other callbacks stay."""
    monkeypatch.setattr(mlflow.utils.autologging_utils, "get_autologging_config", lambda *args, **kwargs: False)
    mlflow_callback, other = MlflowCallback(), BaseCallback()
    seen: list[list[BaseCallback]] = []

    def metric(example: dspy.Example, prediction: dspy.Prediction) -> float:
        seen.append(list(dspy.settings.callbacks))
        return 1.0

    examples = [dspy.Example(question=f"q{n}").with_inputs("question") for n in range(2)]
    with dspy.context(lm=DummyLM([{"answer": "a", "rating": "1"}] * 3), callbacks=[mlflow_callback, other]):
        evaluate_program(dspy.Predict(AnswerAndRate), examples, metric, model=ModelSettings(), num_threads=2,
                         progress=False)
        assert dspy.settings.callbacks == [mlflow_callback, other]  # outside the evaluation, as they were
    assert seen == [[other], [other]]  # the first example also ran alone before (no metric there)


def test_mlflows_callback_stays_in_an_evaluation_that_it_traces(monkeypatch):
    monkeypatch.setattr(mlflow.utils.autologging_utils, "get_autologging_config", lambda *args, **kwargs: True)
    mlflow_callback = MlflowCallback()
    with dspy.context(callbacks=[mlflow_callback]):
        assert _callbacks_inside_evaluate() == [mlflow_callback]
