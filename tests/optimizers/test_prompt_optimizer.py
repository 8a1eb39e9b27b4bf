"""The optimizer is a setting: each name reaches DSPy's own optimizer with prefcraft's budget and models."""

from typing import ClassVar

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft.errors import CompileError
from prefcraft.optimizers.prompt_optimizer import OptimizerConfig, compile_program, thresholded

QUESTIONS = {f"what is {n} plus one?": str(n + 1) for n in range(6)}


def examples():
    return [dspy.Example(question=q, answer=a).with_inputs("question") for q, a in QUESTIONS.items()]


def exact(example, prediction):
    return float(getattr(prediction, "answer", None) == example.answer)


def test_bootstrap_random_search_scores_every_candidate_and_reports_its_validation_score():
    lm = DummyLM({question: {"answer": answer} for question, answer in QUESTIONS.items()})
    config = OptimizerConfig(name="bootstrap_rs", num_candidates=2, max_bootstrapped_demos=1, max_labeled_demos=1,
                             num_threads=1)
    trainset, valset = examples()[:3], examples()[3:]
    with dspy.context(lm=lm):
        compiled = compile_program(dspy.Predict("question -> answer"), trainset=trainset, valset=valset,
                                   metric=thresholded(exact, 1.0), config=config, task_model=lm)
    assert compiled.score == 100.0
    assert len(compiled.candidate_programs) == 2 + 3  # zero-shot, labeled only, unshuffled bootstrap, then random


class StopAtCompileError(Exception):
    pass


class RecordingGEPA(dspy.GEPA):
    seen: ClassVar[dict] = {}

    def compile(self, student, *, trainset, teacher=None, valset=None):
        RecordingGEPA.seen = {"reflection_lm": self.reflection_lm, "max_metric_calls": self.max_metric_calls,
                              "score": self.metric_fn(trainset[0], dspy.Prediction(answer="1"), None, "p", None)}
        raise StopAtCompileError


def test_gepa_reflects_with_the_prompt_model_within_the_metric_call_budget(monkeypatch):
    monkeypatch.setattr(dspy, "GEPA", RecordingGEPA)
    prompt_model, task_model = DummyLM([]), DummyLM([])
    with pytest.raises(StopAtCompileError):
        compile_program(dspy.Predict("question -> answer"), trainset=examples(), valset=examples(), metric=exact,
                        config=OptimizerConfig(name="gepa", max_metric_calls=40), prompt_model=prompt_model,
                        task_model=task_model)
    assert RecordingGEPA.seen == {"reflection_lm": prompt_model, "max_metric_calls": 40, "score": 1.0}


def test_a_thresholded_metric_scores_when_evaluating_and_passes_or_fails_when_bootstrapping():
    metric = thresholded(lambda example, prediction: 0.4, 0.5)
    assert metric(None, None) == 0.4
    assert metric(None, None, trace=[]) is False


def test_an_unparseable_proposal_stops_the_compile_with_a_clear_error_not_a_traceback_from_dspy():
    task_model = DummyLM({question: {"answer": answer} for question, answer in QUESTIONS.items()})
    cut_off = DummyLM([{"proposed_": "the answer was cut off at max_tok"}] * 50)  # no field the proposer expects
    config = OptimizerConfig(num_candidates=2, num_trials=1, max_bootstrapped_demos=0, max_labeled_demos=0,
                             num_threads=1)
    with dspy.context(lm=task_model), pytest.raises(CompileError, match="miprov2 stopped: the answer to") as error:
        compile_program(dspy.Predict("question -> answer"), trainset=examples(), valset=examples(),
                        metric=thresholded(exact, 1.0), config=config, prompt_model=cut_off, task_model=task_model)
    assert "--prompt-max-tokens" in error.value.hint
