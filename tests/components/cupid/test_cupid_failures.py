"""Per-instance failures as the reference code counts them: a prompt over the context window keeps its instance
(recall 0, response 0), any other failure is recorded with its reason, and none stops the run. Scripted models only."""

import json

import dspy
import litellm
import pytest
from dspy.utils import DummyLM

from prefcraft.components.cupid.options import EvaluateOptions
from prefcraft.components.cupid.report import format_evaluation
from prefcraft.engine import evaluation
from prefcraft.engine.item_failures import CONTEXT_OVERFLOW, reason_kind
from prefcraft.programs.cupid import DECOMPOSER_MAX_TOKENS
from prefcraft.settings import ModelSettings, Settings
from tests.components.cupid.test_cupid_command import evaluate_in_run
from tests.programs.test_cupid_programs import REPLY, marked_instance

VLLM_OVERFLOW = ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (31808 in "
                 "the messages, 8192 in the completion).")


class FailingOn(DummyLM):
    """REPLY to every prompt, but raises `error()` for a prompt that holds `marker`."""

    def __init__(self, marker, error):
        super().__init__([REPLY] * 200, adapter=dspy.JSONAdapter())
        self.marker, self.error = marker, error

    def forward(self, prompt=None, messages=None, **kwargs):
        if self.marker in json.dumps(messages):
            raise self.error()
        return super().forward(prompt=prompt, messages=messages, **kwargs)


def context_window_exceeded():
    return litellm.ContextWindowExceededError(message=VLLM_OVERFLOW, model="m", llm_provider="hosted_vllm")


def bad_request(message=VLLM_OVERFLOW):
    return lambda: litellm.BadRequestError(message=message, model="m", llm_provider="hosted_vllm")


@pytest.fixture
def models(monkeypatch):
    """The task model overflows on the instance whose request says LONG; the judge answers REPLY."""
    scripted = {"task": FailingOn("LONG request", context_window_exceeded),
                "judge": DummyLM([REPLY] * 200, adapter=dspy.JSONAdapter())}
    monkeypatch.setattr(evaluation, "lm_context",
                        lambda session, role="task": dspy.context(lm=scripted[role], adapter=dspy.JSONAdapter()))
    monkeypatch.setattr(evaluation, "check_reachable", lambda model: None)
    return scripted


def instances():
    long = marked_instance().model_copy(update={"instance_id": "p/contrastive/1", "instance_type": "contrastive",
                                                "current_request": "A LONG request."})
    return [marked_instance(), long]


def test_an_instance_over_the_context_window_is_kept_with_recall_0_and_its_response_scored_0(models, tmp_path):
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=["gold"])
    outcome = evaluate_in_run(Settings(threads=1), options, instances())
    (inference,) = outcome.inference
    kept, overflowed = inference.results
    assert (overflowed.failed, reason_kind(overflowed.reason), overflowed.checklist) == (
        "inference", CONTEXT_OVERFLOW, [])
    assert overflowed.true_coverage == [0.0, 0.0] and overflowed.recall == 0.0 and kept.failed is None
    # REPLY's match: 2 inferred items (1 + 0.5) and 2 gold items (1 + 0.5); the overflow adds 2 gold items, none
    # covered, and no inferred item: precision 0.75, recall 1.5 / 4.
    assert inference.overall.instances == 2 and inference.overall.context_overflows == 1
    assert inference.overall.inference_failures == 0
    assert inference.overall.precision.mean == pytest.approx(0.75)
    assert inference.overall.recall.mean == pytest.approx(1.5 / 4)
    assert inference.by_type["contrastive"].context_overflows == 1

    (response,) = outcome.responses
    assert [(result.score, result.failed, result.reason and reason_kind(result.reason))
            for result in response.results] == [(7.0, None, None), (0.0, "generation", CONTEXT_OVERFLOW)]
    assert response.score.mean == pytest.approx(3.5) and response.overall.context_overflows == 1
    assert response.overall.generation_failures == 0
    table = format_evaluation(outcome)
    assert "context overflow (0)" in table and "as the reference code does" in table
    rows = [json.loads(line) for line in (tmp_path / "inference-all.jsonl").read_text().splitlines()]
    assert reason_kind(rows[1]["reason"]) == CONTEXT_OVERFLOW and rows[1]["recall"] == 0.0


def test_the_leave_out_rule_leaves_an_overflowing_instance_out_and_counts_it(models, tmp_path):
    models["task"] = FailingOn("LONG request", bad_request())  # vLLM's HTTP 400, not mapped by litellm
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=["gold"],
                              context_overflow="leave-out")
    outcome = evaluate_in_run(Settings(threads=1), options, instances())
    (inference,) = outcome.inference
    assert reason_kind(inference.results[1].reason) == CONTEXT_OVERFLOW and inference.results[1].recall is None
    assert (inference.overall.instances, inference.overall.inference_failures) == (1, 1)
    assert inference.overall.recall.mean == pytest.approx(0.75)
    (response,) = outcome.responses
    assert response.results[1].score is None and response.overall.generation_failures == 1
    assert response.score.mean == pytest.approx(7.0) and response.overall.context_overflows == 0


def test_any_other_failed_call_is_left_out_with_its_reason_and_the_run_goes_on(models, tmp_path):
    models["task"] = FailingOn("LONG request", bad_request("Internal error in the sampler"))
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=["gold"])
    outcome = evaluate_in_run(Settings(threads=1), options, instances())
    (inference,) = outcome.inference
    assert inference.results[1].failed == "inference" and "Internal error in the sampler" in inference.results[1].reason
    assert inference.overall.inference_failures == 1 and inference.overall.context_overflows == 0
    assert outcome.responses[0].overall.generation_failures == 1 and outcome.responses[0].score.mean == 7.0


def test_the_decomposer_is_capped_at_the_references_4096_tokens_below_the_judges_8192(models, tmp_path):
    judge = ModelSettings(model="openai/gpt-4o-2024-11-20", max_tokens=8192)
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=[])
    evaluate_in_run(Settings(threads=1, judge=judge), options, [marked_instance()])
    caps = [(entry["messages"][0]["content"], entry["kwargs"].get("max_tokens")) for entry in models["judge"].history]
    decomposer_caps = {cap for system, cap in caps if "`checklist`" in system and "`coverage`" not in system}
    assert decomposer_caps == {DECOMPOSER_MAX_TOKENS}
    assert all(cap is None for system, cap in caps if "`coverage`" in system)  # the matcher: the judge's own
