"""One user's failed model call (vLLM's 400 for a prompt over the context length) ends that user's fit or judge, is
recorded with its reason and counted, and every other user goes on."""

import json
from contextlib import nullcontext
from types import SimpleNamespace

import dspy
import litellm
import pytest
from dspy.utils.dummies import DummyLM

from prefcraft.components.synthesizeme import evaluation, fit
from prefcraft.components.synthesizeme.options import EvaluateOptions, FitOptions
from prefcraft.components.synthesizeme.report import format_evaluation, format_fit_summary
from prefcraft.runner import run_step
from prefcraft.settings import Settings

LONG = "LONG-CONVERSATION"  # in every prompt of the user whose conversations overflow the context


class ContextLimitLM(DummyLM):
    """A scripted judge, persona writer and memory that refuses, as vLLM does, every prompt holding `LONG`."""

    def __init__(self, error: type[Exception]):
        super().__init__({
            "[[ ## past_judgments ## ]]": {"reasoning": "Short answers win.", "persona": "Likes short answers."},
            "[[ ## second_completion ## ]]": {"reasoning": "The second reads better.", "preference": "Second"},
            "[[ ## conversation ## ]]": {"insights": "Wants practical tips."},  # the memory: matched after the judge
        })
        self.error = error

    def forward(self, prompt=None, messages=None, **kwargs):
        if LONG in json.dumps(messages):
            raise self.error(message="This model's maximum context length is 65536 tokens", model="m",
                             llm_provider="hosted_vllm")
        return super().forward(prompt=prompt, messages=messages, **kwargs)


def write_users(path, user_with):
    """Two users: `fits` and `overflows`, whose every conversation holds LONG."""
    rows = []
    for user_id in ("fits", "overflows"):
        user = user_with(3, 2, user_id=user_id)
        for pair in user.train + user.val + user.test:
            row = pair.model_dump()
            if user_id == "overflows":
                row["context"][0]["content"] += f" {LONG}"
            rows.append(row)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def refusing_server(monkeypatch, tracker):
    """Both steps on ContextLimitLM (raising the error the test names), with no server and no MLflow."""

    def use(error):
        context = lambda *args: dspy.context(lm=ContextLimitLM(error), adapter=dspy.ChatAdapter())  # noqa: E731
        for module in (fit, evaluation):
            monkeypatch.setattr(module, "lm_context", context)
            monkeypatch.setattr(module, "metered_prompt_cache",
                                lambda api_base: nullcontext(SimpleNamespace(usage=None)))
        monkeypatch.setattr(fit, "check_reachable", lambda *args: None)
        return tracker

    return use


def test_a_user_whose_prompt_overflows_the_context_fails_alone(tmp_path, user_with, refusing_server):
    tracker = refusing_server(litellm.ContextWindowExceededError)
    data = write_users(tmp_path / "pairs.jsonl", user_with)
    options = FitOptions(data=str(data), fitted_dir=tmp_path / "fitted", subsets=1, demo_candidates=1)
    summary = run_step("synthesizeme", "fit", options, Settings(threads=1))
    assert set(summary.fitted) == {"fits"} and set(summary.failed) == {"overflows"} and not summary.skipped
    assert summary.failed["overflows"].startswith("context_window_exceeded: ")
    assert summary.not_fitted == 1
    assert "failed 1 (a model call), of 2 user(s)" in format_fit_summary(summary)
    assert tracker.named("fit-synthesizeme").metrics["users_failed"] == 1
    assert (tmp_path / "fitted" / "fits.json").is_file() and not (tmp_path / "fitted" / "overflows.json").exists()


def test_a_memory_the_server_refuses_fails_each_of_the_users_judgments(tmp_path, user_with, refusing_server):
    refusing_server(litellm.BadRequestError)
    data = write_users(tmp_path / "pairs.jsonl", user_with)
    options = EvaluateOptions(data=str(data), methods=["memory"], output_dir=tmp_path / "out")
    outcome = run_step("synthesizeme", "evaluate", options, Settings(threads=1))["memory"]
    assert outcome.users == 2 and set(outcome.failures) == {"overflows"}
    failed = [j for j in outcome.judgments if j.user_id == "overflows"]
    assert len(failed) == 4 and all(j.predicted is None and not j.correct for j in failed)
    judged = [j for j in outcome.judgments if j.user_id == "fits"]
    assert len(judged) == 4 and all(j.predicted == "Second" for j in judged)
    assert "judges that could not be built 1" in format_evaluation({"memory": outcome})
