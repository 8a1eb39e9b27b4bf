"""One LaMP-QA question that fails (its prompt over the server's context, a judgment that does not parse) is recorded
with its reason, counted by kind and scored 0, and the run goes on; an empty profile is answered without posts, as the
reference answers it. Scripted LMs only."""

import json

import dspy
import pytest
from dspy import lm15

from prefcraft import runner
from prefcraft.components.component import StepRun
from prefcraft.components.lampqa import evaluation as lampqa_evaluation
from prefcraft.components.lampqa.data import load_file
from prefcraft.components.lampqa.evaluation import evaluate_methods, method_programs
from prefcraft.components.lampqa.options import EvaluateOptions
from prefcraft.components.lampqa.report import format_evaluation
from prefcraft.engine import evaluation
from prefcraft.registry import COMPONENTS
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker
from tests.fakes import FakeTracker, FieldFillingEngine

OVER_THE_CONTEXT = "What is the longest question?"
UNJUDGEABLE = "Unjudgeable aspect"


def row(index, question, profile):
    return {"id": f"q{index}", "question": question, "narrative": "I need it for work.", "profile": profile,
            "rubric_aspects": [{"aspect": "Practical", "reason": "for work", "evidence": "for work"},
                               {"aspect": UNJUDGEABLE if index == 1 else "Short", "reason": "r", "evidence": "e"}]}


class RefusesOneQuestion(FieldFillingEngine):
    """Refuses, as vLLM refuses a prompt over its context, every call about `OVER_THE_CONTEXT`; judges 2, except the
    `UNJUDGEABLE` aspect, whose reply never parses."""

    def complete(self, request):
        if OVER_THE_CONTEXT in "".join(message.text or "" for message in request.messages):
            raise lm15.ContextLengthError("This model's maximum context length is 32768 tokens")
        return super().complete(request)

    def value(self, field, system, user):
        if field == "match_score":
            return "two" if UNJUDGEABLE in user else 2
        return "An answer."


@pytest.fixture
def questions(tmp_path, caplog):
    posts = [{"id": "p", "text": "Which laptop for travel?"}]
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(question) + "\n" for question in [
        row(0, OVER_THE_CONTEXT, posts), row(1, "Which bag?", posts), row(2, "Which phone?", [])]))
    with caplog.at_level("WARNING"):
        loaded = load_file(path, "Art_and_Entertainment")
    return loaded, path, caplog.records


def test_an_empty_profile_loads_with_one_warning_naming_file_row_and_field(questions):
    loaded, path, records = questions
    assert [len(question.profile) for question in loaded.questions] == [1, 1, 0] and loaded.empty_profiles == 1
    warnings = [record.getMessage() for record in records if record.levelname == "WARNING"]
    assert len(warnings) == 1 and f"{path}, rows 2, field 'profile'" in warnings[0]


def test_a_failed_question_is_recorded_with_its_reason_and_the_run_goes_on(monkeypatch, tmp_path, questions):
    lm = dspy.LM("fake-model", engine=RefusesOneQuestion(), cache=False)
    monkeypatch.setattr(evaluation, "lm_context", lambda *args: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))
    checked = []
    monkeypatch.setattr(lampqa_evaluation, "check_reachable", lambda model, role: checked.append(role))
    options = EvaluateOptions(methods=["baseline", "rag"], no_shipped=True, output_dir=tmp_path, judge_retries=1)
    tracker, session = FakeTracker(), Settings(threads=1)
    run = StepRun(session, session, StepTracker(tracker), print, questions[0])
    with runner.open_step_run(COMPONENTS["lampqa"], tracker, "evaluate", options, run):  # the runner's run
        outcome = evaluate_methods(session, run.tracker, options, questions[0], *method_programs(options, "m"))

    for name in ("baseline", "rag"):
        method = outcome.methods[name]
        assert [result.score for result in method.results] == [0.0, 0.5, 1.0]  # the empty profile answered too
        assert method.report.failure_kinds == {"answer": {"context_window_exceeded": 1},
                                               "judge": {"adapter_parse_error": 1}}
        assert method.cost["answer"].failures == 1 and method.cost["judge"].failures == 1
    rows = [json.loads(line) for line in (tmp_path / "lampqa-rag.jsonl").read_text().splitlines()]
    reason = rows[0]["answer_failure"]
    assert reason.startswith("context_window_exceeded: ") and "maximum context length is 32768" in reason
    assert rows[1]["judge_failures"][0] is None and rows[1]["judge_failures"][1].startswith("adapter_parse_error")
    assert rows[2]["retrieved"] == [] and rows[2]["answer_failure"] is None
    summary = json.loads((tmp_path / "lampqa-summary.json").read_text())
    assert summary["empty_profiles"] == 1 and summary["methods"]["baseline"]["failure_kinds"]["answer"] == {
        "context_window_exceeded": 1}
    assert "1 question(s) with an empty profile" in format_evaluation(outcome)
    assert set(checked) == {"task", "judge"}  # each failure checked against its server, none stopped the run
