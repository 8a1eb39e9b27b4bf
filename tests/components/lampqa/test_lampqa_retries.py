"""LaMP-QA's retries of a reply that does not parse, as the reference's scripts retry: asked again 0.1 warmer each
time while below 1.0, as many times as the step's options say (the reference's counts by default); scripted LMs only."""

import dspy
import pytest
from dspy.utils import DummyLM
from dspy.utils.exceptions import AdapterParseError, LMUnexpectedError

from prefcraft import load, runner
from prefcraft.components.component import StepRun
from prefcraft.components.lampqa.evaluation import evaluate_methods, method_programs, select_questions
from prefcraft.components.lampqa.options import CompileOptions, EvaluateOptions
from prefcraft.engine import evaluation
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.optimizers.lampqa import PROGRAM_NAME
from prefcraft.programs.lampqa import (
    ANSWER_RETRIES,
    JUDGE_RETRIES,
    PLANPERS_RETRIES,
    AspectJudge,
    NoPersonalization,
    PlanPers,
    ProfilePost,
    RubricAspect,
)
from prefcraft.registry import COMPONENTS
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker
from tests.fakes import FakeTracker, FieldFillingEngine

UNPARSEABLE = {"not_a_field": "x"}  # the reply lacks the signature's output: the adapter cannot parse it
ANSWER = {"answer": "An answer."}
PLAN = {"aspects": [{"title": "Low cost", "reason": "tight budget"}]}
POSTS = [ProfilePost(id="1", text="Best guitar for a beginner?")]


def scripted(*answers, temperature=0.0):
    lm = DummyLM(list(answers), adapter=dspy.JSONAdapter())
    lm.kwargs["temperature"] = temperature
    return lm


def temperatures(lm):
    """The temperature each call asked for; None: the model's own."""
    return [entry["kwargs"].get("temperature") for entry in lm.history]


def test_a_reply_that_does_not_parse_is_asked_for_again_warmer_each_time():
    lm = scripted(UNPARSEABLE, UNPARSEABLE, ANSWER, temperature=0.1)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        assert NoPersonalization(retries=5)(question="Which guitar?").answer == "An answer."
    assert temperatures(lm) == [None, pytest.approx(0.2), pytest.approx(0.3)]


def test_the_last_failure_is_raised_once_the_retries_are_spent_and_the_temperature_warms_only_below_one():
    lm = scripted(*[UNPARSEABLE] * 4, temperature=0.85)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), pytest.raises(AdapterParseError):
        NoPersonalization(retries=3)(question="Which guitar?")
    assert temperatures(lm) == [None, pytest.approx(0.95), pytest.approx(1.05), pytest.approx(1.05)]
    lm = scripted(*[UNPARSEABLE] * 12)  # from 0.0 the reference's float sums end on 1.0999999999999999
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), pytest.raises(AdapterParseError):
        NoPersonalization(retries=11)(question="Which guitar?")
    assert temperatures(lm)[-2:] == [0.9999999999999999, 1.0999999999999999]
    lm = scripted(UNPARSEABLE, ANSWER)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), pytest.raises(AdapterParseError):
        NoPersonalization()(question="Which guitar?")  # a program built without retries asks once
    assert len(lm.history) == 1


class ServerDown(FieldFillingEngine):
    def complete(self, request):
        self.prompts.append(request)
        raise ConnectionError("server down")


def test_an_error_other_than_parsing_is_not_retried():
    engine = ServerDown()
    with dspy.context(lm=dspy.LM("fake-model", engine=engine, cache=False), adapter=dspy.JSONAdapter()):
        with pytest.raises(LMUnexpectedError, match="server down"):
            NoPersonalization(retries=5)(question="Which guitar?")
    assert len(engine.prompts) == 1


def test_planpers_retries_its_plan_and_its_answer():
    lm = scripted(UNPARSEABLE, PLAN, UNPARSEABLE, ANSWER)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = PlanPers(retries=1)(question="Which guitar?", profile=POSTS)
    assert prediction.plan == "- Low cost: tight budget" and prediction.answer == "An answer."
    assert temperatures(lm) == [None, pytest.approx(0.1), None, pytest.approx(0.1)]


def test_the_judge_retries_each_aspect_and_scores_none_when_its_retries_are_spent():
    aspects = [RubricAspect(aspect=f"a{i}", reason="r", evidence="e") for i in range(2)]
    lm = scripted({"match_score": "seven"}, {"match_score": 2}, *[{"match_score": 9}] * 3)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        scores = AspectJudge(retries=2)(question="q", details="d", response="r", aspects=aspects).scores
    assert scores == [2, None] and len(lm.history) == 2 + 3


def test_the_steps_retry_as_the_reference_by_default_and_as_told_otherwise():
    every = ["baseline", "rag", "rag_random", "planpers"]
    programs, _ = method_programs(EvaluateOptions(methods=every, no_shipped=True), "hosted_vllm/model")
    assert {name: program.retries for name, program in programs.items()} == {
        "baseline": ANSWER_RETRIES, "rag": ANSWER_RETRIES, "rag_random": ANSWER_RETRIES, "planpers": PLANPERS_RETRIES}
    assert (ANSWER_RETRIES, PLANPERS_RETRIES, JUDGE_RETRIES) == (20, 100, 100)
    assert EvaluateOptions().judge_retries == CompileOptions().judge_retries == JUDGE_RETRIES
    programs, _ = method_programs(EvaluateOptions(methods=every, no_shipped=True, answer_retries=0), "m")
    assert {program.retries for program in programs.values()} == {0}  # 0 is a count, not "unset"


class FirstJudgmentUnparseable(FieldFillingEngine):
    """Answers every field; a judgment at the model's own temperature is not a score, a warmer one is."""

    def complete(self, request):
        self.temperature = request.config.temperature if request.config else None
        return super().complete(request)

    def value(self, field, system, user):
        if field == "match_score":
            return "seven" if not self.temperature else 1
        return {"answer": "An answer."}.get(field, "text")


@pytest.mark.parametrize(("judge_retries", "score", "failed"), [(None, 0.5, 0), (0, 0.0, 1)])
def test_evaluate_retries_the_judge_as_its_options_say(monkeypatch, tmp_path, judge_retries, score, failed):
    lm = dspy.LM("fake-model", engine=FirstJudgmentUnparseable(), cache=False)
    monkeypatch.setattr(evaluation, "lm_context", lambda *args: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))
    given = {} if judge_retries is None else {"judge_retries": judge_retries}
    options = EvaluateOptions(categories=["Art_and_Entertainment"], max_questions=1, methods=["baseline"],
                              no_shipped=True, output_dir=tmp_path, **given)
    loaded = select_questions(options, "test")
    aspects = len(loaded.questions[0].rubric_aspects)
    tracker, session = FakeTracker(), Settings(threads=1)
    run = StepRun(session, session, StepTracker(tracker), print, loaded)
    with runner.open_step_run(COMPONENTS["lampqa"], tracker, "evaluate", options, run):  # the runner's run
        outcome = evaluate_methods(session, run.tracker, options, loaded, *method_programs(options, "m"))

    report = outcome.methods["baseline"].report
    assert report.overall.mean == pytest.approx(score) and report.failed_judgments == failed * aspects
    assert outcome.methods["baseline"].cost["judge"].usage.calls == (2 - failed) * aspects
    assert tracker.named("lampqa-evaluate").params["judge_retries"] == options.judge_retries


def test_a_compiled_planner_loads_with_the_retries_it_was_compiled_with(tmp_path):
    saved = save_compiled(PlanPers(), tmp_path / "planner.json", program_name=PROGRAM_NAME, k=3)
    assert load(saved).program.retries == PLANPERS_RETRIES  # a file that names none: the reference's
    saved = save_compiled(PlanPers(), tmp_path / "planner.json", program_name=PROGRAM_NAME, k=3, retries=2)
    assert load(saved).program.retries == 2
