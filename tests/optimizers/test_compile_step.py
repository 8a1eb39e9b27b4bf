"""The compile skeleton every component's compile goes through: its tracked run (params, the task model, the usage it
logs) and what the optimizer's program is saved with. No server: a fake LM."""

import json

import dspy
import pytest

from prefcraft.optimizers import compile_gate
from prefcraft.optimizers.compile_step import (
    CompileStep,
    ModelAccess,
    compile_params,
    metered_compile,
    optimize_and_gate,
)
from prefcraft.optimizers.prompt_optimizer import MIPROv2Config
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker
from tests.fakes import FakeTracker, FieldFillingEngine


class RightWithDemos(FieldFillingEngine):
    """Answers right only when the prompt shows a training example as a demo, so a compile that adds one beats the
    uncompiled program."""

    def value(self, field, system, user):
        if field == "answer":
            return "4" if "training question" in user else "5"
        return "Answer with a number."


def right(example, prediction, trace=None):
    return float(prediction.answer == example.answer)


@pytest.fixture
def models():
    lm = dspy.LM("fake-model", engine=RightWithDemos(), cache=False)
    roles = []

    def lm_context(session, role):
        roles.append(role)
        return dspy.context(lm=lm, adapter=dspy.JSONAdapter())

    return ModelAccess(build_lm=lambda model: lm, lm_context=lm_context), roles


def test_the_compile_params_hold_every_param_and_the_compile_runs_on_the_task_model_and_logs_its_usage(models):
    access, roles = models
    tracker, session = FakeTracker(), Settings()
    params = compile_params(session, "example", MIPROv2Config(num_trials=2), {"data": "rows.jsonl"})
    with tracker.run("example-compile", params), metered_compile(session, StepTracker(tracker), access):
        dspy.Predict("question -> answer")(question="2 + 2?")

    run = tracker.named("example-compile")
    assert roles == ["task"]
    assert (run.params["program"], run.params["data"]) == ("example", "rows.jsonl")
    assert (run.params["name"], run.params["num_trials"]) == ("miprov2", 2)
    assert run.params["task_model"] == session.task.model and "judge_model" in run.params
    assert run.metrics["lm_calls"] == 1


@pytest.mark.parametrize(("prompt_demos_only", "count_trials"), [(True, False), (False, True)])
def test_the_saved_program_carries_the_metadata_and_the_demos_the_step_asks_for(
    models, tmp_path, monkeypatch, prompt_demos_only, count_trials
):
    access, _ = models
    monkeypatch.setattr(compile_gate, "check_servers", lambda session: None)  # the fake LM needs no server
    monkeypatch.setattr(compile_gate, "register_compiled", lambda *args: False)
    trainset, valset = ([dspy.Example(question=f"{split} question {n}", answer="4", row_id=n).with_inputs("question")
                         for n in range(2)] for split in ("training", "validation"))
    step = CompileStep("example", lambda: dspy.Predict("question -> answer"),
                       MIPROv2Config(num_candidates=2, num_trials=3, max_bootstrapped_demos=0, max_labeled_demos=1,
                                     num_threads=1),
                       tmp_path / "example.json", {"data": "rows.jsonl"}, prompt_demos_only, count_trials)
    tracker = FakeTracker()
    with tracker.run("example-compile"), access.lm_context(Settings(), "task"):
        verdict = optimize_and_gate(Settings(threads=1), StepTracker(tracker), step, right, trainset, valset, access)

    saved = json.loads(verdict.path.read_text())
    metadata = saved["prefcraft"]
    assert metadata["won"] and metadata["data"] == "rows.jsonl" and metadata["optimizer"]["num_trials"] == 3
    assert ("trials" in metadata) is count_trials
    [demo] = saved["demos"]
    assert ("row_id" in demo) is not prompt_demos_only  # a labeled demo keeps the example's id unless cut down
