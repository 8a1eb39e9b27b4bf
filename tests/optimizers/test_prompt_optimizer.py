"""The optimizer is a setting: each config reaches DSPy's own optimizer with prefcraft's budget and models, through
one teleprompter that compiles a copy and records what it tried."""

from typing import ClassVar

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft.errors import CompileError
from prefcraft.optimizers.prompt_optimizer import (
    BootstrapRSConfig,
    GEPAConfig,
    MIPROv2Config,
    PromptOptimizer,
    thresholded,
)

QUESTIONS = {f"what is {n} plus one?": str(n + 1) for n in range(6)}


def examples():
    return [dspy.Example(question=q, answer=a).with_inputs("question") for q, a in QUESTIONS.items()]


def exact(example, prediction, trace=None):
    return float(getattr(prediction, "answer", None) == example.answer)


def test_bootstrap_random_search_scores_every_candidate_and_records_its_validation_score():
    lm = DummyLM({question: {"answer": answer} for question, answer in QUESTIONS.items()})
    config = BootstrapRSConfig(num_candidates=2, max_bootstrapped_demos=1, max_labeled_demos=1, metric_threshold=1.0,
                               num_threads=1)
    trainset, valset = examples()[:3], examples()[3:]
    student = dspy.Predict("question -> answer")
    with dspy.context(lm=lm):
        compiled = PromptOptimizer(exact, config, task_model=lm).compile(student, trainset=trainset, valset=valset)
    record = compiled.compile_record
    assert (record.optimizer, record.validation_score, record.trial_logs) == ("bootstrap_rs", 100.0, {})
    assert record.params == {"name": "bootstrap_rs", "num_candidates": 2, "max_bootstrapped_demos": 1,
                             "max_labeled_demos": 1, "metric_threshold": 1.0, "num_threads": 1}
    assert len(compiled.candidate_programs) == 2 + 3  # zero-shot, labeled only, unshuffled bootstrap, then random
    assert compiled is not student and student.demos == []  # compiled on a copy


def test_each_config_holds_its_own_options_and_logs_them_under_the_shared_names():
    assert set(MIPROv2Config().as_params()) == {
        "name", "num_candidates", "num_trials", "max_bootstrapped_demos", "max_labeled_demos", "view_data_batch_size",
        "minibatch_full_eval_steps", "metric_threshold", "num_threads", "seed"}
    assert GEPAConfig().as_params() == {"name": "gepa", "max_metric_calls": 400, "num_threads": 4, "seed": 9}


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
        PromptOptimizer(exact, GEPAConfig(max_metric_calls=40), prompt_model=prompt_model,
                        task_model=task_model).compile(dspy.Predict("question -> answer"), trainset=examples(),
                                                       valset=examples())
    assert RecordingGEPA.seen == {"reflection_lm": prompt_model, "max_metric_calls": 40, "score": 1.0}


def test_a_thresholded_metric_scores_when_evaluating_and_passes_or_fails_when_bootstrapping():
    metric = thresholded(lambda example, prediction: 0.4, 0.5)
    assert metric(None, None) == 0.4
    assert metric(None, None, trace=[]) is False


def test_an_unparseable_proposal_stops_the_compile_with_a_clear_error_not_a_traceback_from_dspy():
    task_model = DummyLM({question: {"answer": answer} for question, answer in QUESTIONS.items()})
    cut_off = DummyLM([{"proposed_": "the answer was cut off at max_tok"}] * 50)  # no field the proposer expects
    config = MIPROv2Config(num_candidates=2, num_trials=1, max_bootstrapped_demos=0, max_labeled_demos=0,
                           metric_threshold=1.0, num_threads=1)
    optimizer = PromptOptimizer(exact, config, prompt_model=cut_off, task_model=task_model)
    with dspy.context(lm=task_model), pytest.raises(CompileError, match="miprov2 stopped: the answer to") as error:
        optimizer.compile(dspy.Predict("question -> answer"), trainset=examples(), valset=examples())
    assert "--prompt-max-tokens" in error.value.hint
