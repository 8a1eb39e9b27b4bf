"""`prefcraft lampqa` without a model server: the command line, evaluate's and compile's control flow on a fake LM
that answers every output field (JSON, as the schema adapter asks), and exact call counts."""

import json
from contextlib import contextmanager, nullcontext
from typing import get_args

import dspy
import pytest

from prefcraft import runner
from prefcraft.commands.main import main, make_parser
from prefcraft.components.component import StepRun
from prefcraft.components.lampqa import compilation as lampqa_compile
from prefcraft.components.lampqa.charts import CHARTS
from prefcraft.components.lampqa.compilation import compile_and_select
from prefcraft.components.lampqa.evaluation import (
    evaluate_methods,
    load_evaluated,
    method_programs,
    select_questions,
    with_random_profiles,
)
from prefcraft.components.lampqa.metrics import method_report
from prefcraft.components.lampqa.options import DEFAULT_METHODS, CompileOptions, DemoOptions, EvaluateOptions, Method
from prefcraft.components.lampqa.report import format_compile, format_evaluation
from prefcraft.components.lampqa.results import BASELINE, EvaluationOutcome, MethodOutcome
from prefcraft.engine import evaluation
from prefcraft.errors import ConfigError
from prefcraft.experiments.files import load_experiment
from prefcraft.optimizers import artifacts, compile_gate
from prefcraft.optimizers.artifacts import register_compiled, save_compiled
from prefcraft.optimizers.lampqa import PROGRAM_NAME
from prefcraft.programs.lampqa import PlanPers
from prefcraft.registry import COMPONENTS
from prefcraft.report_parts.records import RunRecord
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker
from tests.fakes import FakeTracker, FieldFillingEngine

VALUES = {"answer": "An answer.", "aspects": [{"title": "Low cost", "reason": "tight budget"}], "match_score": 1}


class FieldFiller(FieldFillingEngine):
    """Fills every output field the prompt asks for; proposer fields get a short text."""

    def value(self, field, system, user):
        return VALUES.get(field, "Answer the question for this user.")


@pytest.fixture
def fake_lm(monkeypatch):
    """No server: every model role answers from the field-filling LM (runs go to a `FakeTracker`, not MLflow)."""
    lm = dspy.LM("fake-model", engine=FieldFiller(), cache=False)
    for module in (lampqa_compile, evaluation):
        monkeypatch.setattr(module, "lm_context", lambda *args: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))
    monkeypatch.setattr(lampqa_compile, "build_lm", lambda model: lm)
    return lm


@contextmanager
def step_run(step, options, loaded):
    """The run the runner opens for `step` (its name, and its params from `options` and `loaded`), recorded by a
    `FakeTracker`: the work, called directly inside it, records into it through `run.tracker`."""
    tracker, session = FakeTracker(), Settings(threads=1)
    run = StepRun(session, session, StepTracker(tracker), print, loaded)
    with runner.open_step_run(COMPONENTS["lampqa"], tracker, step, options, run):
        yield tracker, run


def test_evaluate_answers_judges_every_aspect_and_writes_results(fake_lm, tmp_path):
    options = EvaluateOptions(max_questions=1, no_shipped=True, output_dir=tmp_path, k=3)
    loaded = select_questions(options, "test")
    aspects = sum(len(question.rubric_aspects) for question in loaded.questions)
    programs, compiled = method_programs(options, "hosted_vllm/SmolLM2-135M-Instruct")
    with step_run("evaluate", options, loaded) as (tracker, run):
        outcome = evaluate_methods(run.session, run.tracker, options, loaded, programs, compiled)  # no warm-up

    assert list(outcome.methods) == ["baseline", "rag", "planpers"] and outcome.questions == 3
    for method in outcome.methods.values():
        assert method.report.overall.mean == pytest.approx(0.5)  # every aspect judged 1 of 2
        assert method.cost["answer"].usage.calls == 3 * (2 if method.name == "planpers" else 1)
        assert method.cost["judge"].usage.calls == aspects  # one judge call per gold aspect
        assert method.gain == pytest.approx(0.0)
    assert outcome.methods["planpers"].cost["coverage"].usage.calls == aspects
    assert outcome.methods["planpers"].coverage.mean == pytest.approx(0.5)

    rows = [json.loads(line) for line in (tmp_path / "lampqa-planpers.jsonl").read_text().splitlines()]
    assert [row["plan"] for row in rows] == ["- Low cost: tight budget"] * 3 and len(rows[0]["retrieved"]) == 3
    summary = json.loads((tmp_path / "lampqa-summary.json").read_text())
    assert set(summary["methods"]["rag"]["by_category"]) == {q.category for q in loaded.questions}
    text = format_evaluation(outcome)
    assert "PlanPers" in text and "Planner coverage" in text and "gain vs baseline" in text
    assert "Cost per question" in text and "baseline (No personalization)" in text

    parent = tracker.named("lampqa-evaluate")  # one parent run, a child run per method, each result written once
    assert parent.params["split"] == "test" and parent.params["k"] == 3 and parent.params["kind"] == "bm25"
    assert parent.params["questions"] == 3 and parent.params["methods"] == ["baseline", "rag", "planpers"]
    assert parent.params["compiled"] == "" and not parent.nested
    assert parent.files == [tmp_path / "lampqa-summary.json"] and parent.metrics["planpers_gain"] == 0.0
    for name in ("baseline", "rag", "planpers"):
        child = tracker.named(f"lampqa-{name}")
        assert child.nested and child.params == {"method": name} and child.files == [tmp_path / f"lampqa-{name}.jsonl"]
        assert child.metrics["judge_failures"] == 0.0


def test_compile_keeps_a_program_only_when_it_wins_on_validation(fake_lm, tmp_path, monkeypatch):
    registered = []
    monkeypatch.setattr(compile_gate, "register_compiled", lambda *args: registered.append(args) or True)
    monkeypatch.setattr(compile_gate, "check_servers", lambda session: None)  # the fake LM needs no server
    options = CompileOptions(max_questions=1, candidates=2, trials=2, max_bootstrapped_demos=1, max_labeled_demos=0,
                             output=tmp_path / "compiled.json", output_dir=tmp_path, k=3)
    trainset = [q.example() for q in select_questions(options, "train").questions]
    valset = [q.example() for q in select_questions(options, "validation").questions]
    with step_run("compile", options, (trainset, valset)) as (tracker, run):
        outcome = compile_and_select(run.session, options, trainset, valset, run.tracker)

    # The fake LM answers every prompt alike, so no candidate can beat the starting program: nothing ships.
    verdict = outcome.verdict
    assert verdict.compiled_score == pytest.approx(verdict.uncompiled_score) == pytest.approx(0.5)
    assert not verdict.won and not registered
    assert verdict.path == tmp_path / "compiled.json"
    assert json.loads(verdict.path.read_text())["prefcraft"]["won"] is False
    assert outcome.usage.calls > 0 and "NOT shipped" in format_compile(outcome)
    run = tracker.named("lampqa-compile")
    assert run.params["name"] == "miprov2" and run.params["num_trials"] == 2 and run.params["program"] == PROGRAM_NAME
    assert (run.params["train"], run.params["val"], run.params["k"]) == (len(trainset), len(valset), 3)
    assert run.metrics["won"] == 0 and run.metrics["lm_calls"] == outcome.usage.calls
    assert run.programs == [(verdict.path, "lampqa_planner", None)]  # logged as a model, not promoted


def test_the_demo_and_compile_flags():
    demo = make_parser().parse_args(["lampqa", "demo"])
    assert (demo.max_questions, demo.k, demo.methods) == (1, 5, ["baseline", "rag", "planpers"])
    compile_args = make_parser().parse_args(["lampqa", "compile"])
    assert (compile_args.candidates, compile_args.trials, compile_args.optimizer) == (20, 30, "miprov2")
    assert compile_args.max_labeled_demos == 0


def test_the_former_configs_option_is_taken_for_one_release_naming_categories(caplog, tmp_path):
    parser = make_parser()
    art, society = "Art_and_Entertainment", "Society_and_Culture"
    assert parser.parse_args(["lampqa", "evaluate", "--categories", art, society]).categories == [art, society]
    assert "is now" not in caplog.text
    assert parser.parse_args(["lampqa", "compile", "--configs", art]).categories == [art]
    assert "--configs is now --categories" in caplog.text
    experiment = tmp_path / "lampqa.toml"
    experiment.write_text(f'name = "t"\ncomponent = "lampqa"\n[steps.evaluate]\nconfigs = ["{art}"]\n')
    assert load_experiment(experiment).steps["evaluate"] == {"categories": [art]}
    assert "option configs is now categories" in caplog.text
    assert DemoOptions(configs=[society]).categories == [society]
    questions = select_questions(DemoOptions(categories=[art]), "test").questions
    assert questions and {question.category for question in questions} == {art}


def test_the_former_none_method_is_taken_for_one_release_as_the_baseline(caplog, tmp_path):
    parser = make_parser()
    assert parser.parse_args(["lampqa", "evaluate", "--methods", "baseline", "rag"]).methods == ["baseline", "rag"]
    assert "is now" not in caplog.text
    assert parser.parse_args(["lampqa", "demo", "--methods", "none", "planpers"]).methods == ["baseline", "planpers"]
    assert "'none' is now 'baseline'" in caplog.text
    caplog.clear()
    experiment = tmp_path / "lampqa.toml"
    experiment.write_text('name = "t"\ncomponent = "lampqa"\n[steps.evaluate]\nmethods = ["none", "rag"]\n')
    assert load_experiment(experiment).steps["evaluate"] == {"methods": ["baseline", "rag"]}
    assert "is now 'baseline'" in caplog.text
    caplog.clear()
    assert EvaluateOptions(methods=["none"]).methods == ["baseline"] and "is now 'baseline'" in caplog.text
    assert BASELINE == "baseline" and DEFAULT_METHODS[0] == BASELINE and "none" not in get_args(Method)


def test_the_report_and_the_charts_pick_the_baseline_by_its_name():
    methods = {name: MethodOutcome(name, method_report([]), [], {}, gain=0.0) for name in ("baseline", "rag")}
    text = format_evaluation(EvaluationOutcome("test", 0, 0, methods, None))
    assert "gain vs baseline" in text and "baseline (No personalization)" in text

    def record(name, metrics, children=()):
        return RunRecord(name, name, "FINISHED", 0, 0, {}, metrics, None, list(children))

    children = [record(f"lampqa-{name}", {"score": score, "score_Lifestyle": score})
                for name, score in (("baseline", 0.3), ("planpers", 0.5))]
    run = record("lampqa-evaluate", {}, children)
    for chart in (*CHARTS.comparisons(run), *CHARTS.spreads(run)):
        assert [(row.label, row.baseline) for row in chart.rows] == [("baseline", True), ("planpers", False)]


def test_the_demo_runs_through_the_runner_in_one_tracked_run_and_reports_once(fake_lm, tmp_path, monkeypatch):
    tracker = FakeTracker()
    monkeypatch.setattr(runner, "model_session", nullcontext)  # the fake LM needs no server
    monkeypatch.setattr(runner, "start_tracking", lambda session: tracker)
    emitted = []
    options = DemoOptions(k=3, no_shipped=True, output_dir=tmp_path)
    outcome = runner.run_step("lampqa", "demo", options, Settings(threads=1), emitted.append)

    assert emitted == [format_evaluation(outcome)] and outcome.split == "test" and outcome.questions == 3
    assert [run.name for run in tracker.runs] == ["lampqa-evaluate", "lampqa-baseline", "lampqa-rag", "lampqa-planpers"]
    assert tracker.runs[0].params["questions"] == 3 and tracker.runs[0].params["k"] == 3
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "lampqa-baseline.jsonl", "lampqa-planpers.jsonl", "lampqa-rag.jsonl", "lampqa-summary.json"]


def test_the_demo_reads_the_test_questions_and_evaluate_the_split_asked_for():
    demo = load_evaluated(DemoOptions())
    assert len(demo.questions) == 3 and demo.questions == select_questions(DemoOptions(), "test").questions
    assert EvaluateOptions(split="val").questions_split == "validation"
    assert EvaluateOptions().questions_split == DemoOptions().questions_split == "test"


def test_bad_input_fails_before_any_server_starts(tmp_path, capsys):
    assert main(["lampqa", "evaluate", "--data", str(tmp_path / "absent.jsonl")]) == 2
    assert "file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "1", "question": "q", "narrative": "n", "rubric_aspects": [], "profile": []}))
    assert main(["lampqa", "evaluate", "--data", str(bad)]) == 2
    assert "row 0, field 'rubric_aspects'" in capsys.readouterr().err
    assert main(["lampqa", "compile", "--data", str(bad)]) == 2
    assert "not one file" in capsys.readouterr().err
    assert main(["lampqa", "evaluate", "--retriever", "dense", "--no-shipped"]) == 2
    assert "needs an embedding model" in capsys.readouterr().err
    assert main(["lampqa", "evaluate", "--compiled", str(tmp_path / "absent.json")]) == 2
    assert "absent.json does not exist" in capsys.readouterr().err
    assert main(["lampqa", "compile", "--retriever", "dense"]) == 2
    assert "needs an embedding model" in capsys.readouterr().err


def test_the_small_model_profile_cuts_retrieved_posts_and_the_paper_profile_does_not():
    options = EvaluateOptions(no_shipped=True)
    cut, _ = method_programs(options, "hosted_vllm/SmolLM2-135M-Instruct", post_chars=300)
    whole, _ = method_programs(options, "hosted_vllm/Qwen/Qwen2.5-7B-Instruct")
    assert cut["rag"].post_chars == cut["planpers"].post_chars == 300
    assert whole["rag"].post_chars is None and whole["planpers"].post_chars is None


def test_rag_random_answers_each_question_from_another_users_profile(fake_lm, tmp_path):
    options = EvaluateOptions(max_questions=2, methods=["rag_random"], no_shipped=True, output_dir=tmp_path, k=3)
    loaded = select_questions(options, "test")
    examples = [question.example() for question in loaded.questions]
    drawn = with_random_profiles(examples, seed=0)
    assert [example.question for example in drawn] == [example.question for example in examples]
    assert all(new.profile != own.profile and new.profile in {e.profile for e in examples}
               for new, own in zip(drawn, examples, strict=True))
    assert [e.profile for e in with_random_profiles(examples, seed=0)] == [e.profile for e in drawn]  # seeded
    assert any([e.profile for e in with_random_profiles(examples, seed=seed)] != [e.profile for e in drawn]
               for seed in range(1, 5))
    with pytest.raises(ConfigError, match="at least two users"):
        with_random_profiles(examples[:1], seed=0)

    programs, compiled = method_programs(options, "hosted_vllm/SmolLM2-135M-Instruct")
    with step_run("evaluate", options, loaded) as (_, run):
        outcome = evaluate_methods(run.session, run.tracker, options, loaded, programs, compiled)
    assert list(outcome.methods) == ["rag_random"] and outcome.methods["rag_random"].report.overall.mean == 0.5
    rows = [json.loads(line) for line in (tmp_path / "lampqa-rag_random.jsonl").read_text().splitlines()]
    for row, question, example in zip(rows, loaded.questions, drawn, strict=True):
        assert set(row["retrieved"]) <= {post.id for post in example.profile}  # the drawn user's posts
        assert row["id"] == question.id
    assert "RAG (random user's profile)" in format_evaluation(outcome)
    assert make_parser().parse_args(["lampqa", "evaluate", "--methods", "rag_random"]).methods == ["rag_random"]


def test_the_evaluate_run_names_the_shipped_planpers_and_a_shipped_file_since_lost_is_said_once(
    fake_lm, tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(runner, "model_session", nullcontext)  # the fake LM needs no server
    monkeypatch.setattr(artifacts, "COMPILED_DIR", tmp_path / "compiled")
    monkeypatch.setattr(artifacts, "COMPILED_INDEX", tmp_path / "compiled" / "index.json")
    settings = Settings(threads=1)
    path = save_compiled(PlanPers(), tmp_path / "compiled" / "planner.json", program_name=PROGRAM_NAME, won=True, k=3)
    assert register_compiled(PROGRAM_NAME, settings.task.model, path)
    options = EvaluateOptions(max_questions=1, methods=["baseline"], output_dir=tmp_path / "results", k=3)

    tracker = FakeTracker()
    monkeypatch.setattr(runner, "start_tracking", lambda session: tracker)
    outcome = runner.run_step("lampqa", "evaluate", options, settings, lambda line: None)
    params = tracker.named("lampqa-evaluate").params
    assert list(outcome.methods) == params["methods"] == ["baseline", "planpers_compiled"]
    assert outcome.compiled == path and params["compiled"] == str(path)

    save_compiled(PlanPers(), path, program_name=PROGRAM_NAME, won=False, verdict="no better")  # a losing compile
    tracker = FakeTracker()
    with caplog.at_level("WARNING"):
        outcome = runner.run_step("lampqa", "evaluate", options, settings, lambda line: None)
    params = tracker.named("lampqa-evaluate").params
    assert list(outcome.methods) == params["methods"] == ["baseline"]
    assert outcome.compiled is None and params["compiled"] == ""
    assert caplog.text.count("has been written over it") == 1  # by the work; the run's params looked it up quietly
