"""The ship gate: a compile ships only when it changed the program, gave no degenerate output and beat the uncompiled
program on validation (a pure verdict); the runner's gate saves the file and logs the run, both carrying the degenerate
counts."""

import json

import dspy
import mlflow
import pytest
from openai_standin import StandInServer

from prefcraft.engine.session import lm_context
from prefcraft.optimizers.compile_gate import keep_if_better
from prefcraft.optimizers.compile_selection import CompileVerdict, Validation, ship_decision
from prefcraft.settings import Settings
from prefcraft.tracking.runs import MLflowTracker, StepTracker
from tests.fakes import FakeTracker


def test_a_compile_that_beats_the_uncompiled_program_with_clean_outputs_wins():
    won, reason = ship_decision(Validation(0.5, 0), Validation(0.8, 0), differs=True)
    assert won and "0.800 against 0.500" in reason


def test_a_compile_that_changed_nothing_never_wins():
    won, reason = ship_decision(Validation(0.5, 0), Validation(0.9, 0), differs=False)
    assert not won and "changed no instruction or demo" in reason


@pytest.mark.parametrize("uncompiled_degenerate", [0, 1, 5])
def test_any_degenerate_validation_output_refuses_a_compile_whatever_its_score(uncompiled_degenerate):
    won, reason = ship_decision(Validation(0.5, uncompiled_degenerate), Validation(0.857, 1), differs=True)
    assert not won
    assert "1 of its validation outputs are degenerate" in reason and f"uncompiled: {uncompiled_degenerate}" in reason


@pytest.mark.parametrize("compiled_score", [0.5, 0.4])
def test_a_tie_or_a_lower_score_does_not_win(compiled_score):
    won, reason = ship_decision(Validation(0.5, 0), Validation(compiled_score, 0), differs=True)
    assert not won and "did not beat" in reason


def test_the_verdict_decides_through_the_same_rule():
    clean = CompileVerdict(0.5, 0.8, True, path=None, registered=False)
    degenerate = CompileVerdict(0.5, 0.8, True, path=None, registered=False, compiled_degenerate=2)
    assert clean.won and not degenerate.won and "2 of its validation outputs" in degenerate.reason


class Echoed(dspy.Signature):
    """Answer the question."""

    question: str = dspy.InputField()
    hi: str = dspy.OutputField()  # the stand-in server answers every string "hi": this field's own name


class Answered(dspy.Signature):
    """Answer the question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()


@pytest.fixture
def standin():
    server = StandInServer()
    yield server
    server.close()


def _gate(signature, standin, tmp_path, score, tracker):
    session = Settings().with_api_base(standin.api_base)
    uncompiled = dspy.Predict(signature)
    compiled = dspy.Predict(signature.with_instructions("Answer the question in one word."))
    valset = [dspy.Example(question=f"question {n}").with_inputs("question") for n in range(3)]
    with tracker.run("compile") as run, lm_context(session, "task"):
        verdict = keep_if_better(session, StepTracker(tracker), compiled=compiled, uncompiled=uncompiled, valset=valset,
                                 score=score, program_name="program", output=tmp_path / "program.json")
    return verdict, run


def test_the_gate_refuses_a_compile_whose_outputs_echo_the_field_name_and_logs_the_counts_to_mlflow(standin, tmp_path):
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("compile-selection")  # not the experiment id an earlier test's store left as active
    verdict, run = _gate(Echoed, standin, tmp_path, lambda example, prediction: 1.0, MLflowTracker())
    assert (verdict.compiled_degenerate, verdict.uncompiled_degenerate) == (3, 3)
    assert not verdict.won and not verdict.registered and verdict.path == tmp_path / "program.json"
    metrics = mlflow.get_run(run.info.run_id).data.metrics
    assert metrics["val_degenerate_compiled"] == metrics["val_degenerate_uncompiled"] == 3 and metrics["won"] == 0
    children = mlflow.search_runs(filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'", output_format="list")
    assert sorted(child.info.run_name for child in children) == ["compiled-on-val", "uncompiled-on-val"]
    saved = json.loads(verdict.path.read_text())["prefcraft"]
    assert saved["score"]["val_degenerate_compiled"] == 3
    assert saved["won"] is False and saved["verdict"] == verdict.reason
    assert verdict.model_uri.startswith("models:/m-") and mlflow.MlflowClient().search_registered_models() == []


def test_the_gate_counts_no_degenerate_output_in_real_text(standin, tmp_path):
    tracker = FakeTracker()
    verdict, run = _gate(Answered, standin, tmp_path, lambda example, prediction: 0.5, tracker)
    assert (verdict.compiled_degenerate, verdict.uncompiled_degenerate) == (0, 0)
    assert run.metrics["val_degenerate_compiled"] == 0 and "did not beat" in verdict.reason  # equal scores
    assert run.programs == [(tmp_path / "program.json", "program", None)]  # logged as a model, not promoted
    assert [(child.name, child.nested, child.metrics["val_score"]) for child in tracker.runs[1:]] == [
        ("uncompiled-on-val", True, 0.5), ("compiled-on-val", True, 0.5)]
