"""`prefcraft cupid`: the command line, the evaluation's control flow on scripted models, and one real run."""

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import dspy
import mlflow
import pytest
from dspy.utils import DummyLM

from prefcraft import runner
from prefcraft.commands.main import main, make_parser
from prefcraft.components.component import StepRun
from prefcraft.components.cupid import evaluation as cupid
from prefcraft.components.cupid.charts import CHARTS
from prefcraft.components.cupid.commands import compare
from prefcraft.components.cupid.compilation import compile_run_params, load_compiled_on
from prefcraft.components.cupid.evaluation import (
    evaluate,
    evaluate_instances,
    evaluated,
    load_evaluated,
    select_instances,
)
from prefcraft.components.cupid.options import CompileOptions, DemoOptions, EvaluateOptions
from prefcraft.components.cupid.report import SYNTHETIC_NOTE, format_evaluation
from prefcraft.components.cupid.results import EvaluationOutcome
from prefcraft.engine import evaluation
from prefcraft.errors import ConfigError
from prefcraft.experiments.files import load_experiment
from prefcraft.optimizers.options import optimizer_config
from prefcraft.registry import COMPONENTS
from prefcraft.report_parts.records import RunRecord
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, data_digest, model_params
from tests.fakes import FakeTracker
from tests.programs.test_cupid_programs import GOLD_MARKERS, REPLY, marked_instance


@pytest.fixture
def role_models(monkeypatch):
    """No server; the task and judge roles each answer from their own scripted LM."""
    models = {role: DummyLM([REPLY] * 500, adapter=dspy.JSONAdapter()) for role in ("task", "judge")}
    monkeypatch.setattr(evaluation, "lm_context",
                        lambda session, role="task": dspy.context(lm=models[role], adapter=dspy.JSONAdapter()))
    return models


def evaluate_in_run(session, options, instances, fake=None):
    """The evaluation of `instances` recorded as the runner records `prefcraft cupid evaluate`: in the run the step
    declares, opened with its params (`open_step_run`); `fake` keeps the runs."""
    fake = FakeTracker() if fake is None else fake
    run = StepRun(session, session, StepTracker(fake), lambda line: None, evaluated(options, instances))
    with runner.open_step_run(COMPONENTS["cupid"], fake, "evaluate", options, run):
        return evaluate(options, run)


def test_the_runner_opens_the_evaluate_run_with_its_params_and_the_evaluation_records_into_it(
    role_models, fake_runner, tmp_path, monkeypatch
):
    chosen = []
    inferrers = cupid._inferrers
    monkeypatch.setattr(cupid, "_inferrers", lambda session, options: chosen.append(1) or inferrers(session, options))
    options = EvaluateOptions(max_instances=1, no_shipped=True, output_dir=tmp_path, responses=["gold"])
    settings = Settings(threads=1)

    outcome = runner.run_step("cupid", "evaluate", options, settings, emit=lambda line: None)

    top, *children = fake_runner.runs
    assert (top.name, top.nested) == ("cupid-evaluate", False)
    assert top.params == {
        "program": "cupid", "data": str(options.source), "data_digest": data_digest(options.source), "split": "test",
        "instances": 1, "skipped_rows": 0, "sessions": "all", "oracle_left_out": None, "inferrers": ["all"],
        "judge_prompt": "reference", "context_overflow": "zero", **model_params(settings)}
    assert [(child.name, child.params, child.nested) for child in children] == [
        ("infer-all", {"inferrer": "all"}, True), ("respond-gold", {"response_method": "gold"}, True)]
    assert top.files == [tmp_path / "inference-all.jsonl", tmp_path / "responses.jsonl"]
    assert "f1" in children[0].metrics and "score" in children[1].metrics
    assert chosen == [1]  # the params and the work share one choice of inferrers
    assert outcome.instances == 1 and outcome.failed_items == 0


def test_the_demo_records_in_the_run_evaluate_declares_with_its_params(role_models, fake_runner, tmp_path):
    assert COMPONENTS["cupid"].steps["demo"].run_name == "cupid-evaluate"
    assert COMPONENTS["cupid"].run_names == ("cupid-compile", "cupid-evaluate")
    options = DemoOptions(max_instances=1, no_shipped=True, output_dir=tmp_path, responses=["gold"])

    runner.run_step("cupid", "demo", options, Settings(threads=1), emit=lambda line: None)

    top, *children = fake_runner.runs
    assert (top.name, top.nested, [child.nested for child in children]) == ("cupid-evaluate", False, [True, True])
    assert (top.params["data"], top.params["instances"], top.params["inferrers"]) == (
        str(options.source), 1, ["all"])
    assert top.files == [tmp_path / "inference-all.jsonl", tmp_path / "responses.jsonl"]


def test_the_compile_run_is_declared_with_the_compiles_params():
    step = COMPONENTS["cupid"].steps["compile"]
    assert step.run_name == "cupid-compile" and step.params is compile_run_params
    options, settings = CompileOptions(trials=3), Settings()
    trainset, valset = load_compiled_on(options)
    run = StepRun(settings, settings, StepTracker(FakeTracker()), lambda line: None, (trainset, valset))
    assert compile_run_params(options, run) == {
        "program": "cupid_inferrer", "inferrer": "all", "data": str(options.source),
        "data_digest": data_digest(options.source), "train": len(trainset), "val": len(valset),
        **optimizer_config(options, settings).as_params(), **model_params(settings)}


def test_an_empty_split_stops_the_evaluation_before_any_server_starts():
    with pytest.raises(ConfigError, match="no instances in the val split"):
        load_evaluated(EvaluateOptions(split="val", val_personas=0))


def test_evaluation_scores_every_instance_and_keeps_gold_away_from_the_task_model(role_models, tmp_path):
    instances = [marked_instance(), marked_instance(sessions=2)]
    options = EvaluateOptions(inferrers=["all", "relevant"], no_shipped=True, output_dir=tmp_path,
                              responses=["baseline", "sessions", "inferred"])
    outcome = evaluate_in_run(Settings(threads=1), options, instances)

    assert [inference.name for inference in outcome.inference] == ["all", "relevant"]
    for inference in outcome.inference:
        # REPLY: inferred checklist 2 items (Fully, Partially) vs gold; gold 2 items (Fully, Partially): P = R = 0.75.
        assert inference.overall.precision.mean == pytest.approx(0.75)
        assert inference.overall.recall.mean == pytest.approx(0.75)
        assert inference.overall.f1.mean == pytest.approx(0.75)
        assert set(inference.by_type) == {"consistent"} and inference.overall.inference_failures == 0
    assert [response.method for response in outcome.responses] == ["baseline", "sessions", "inferred"]
    assert all(response.score.mean == 7 and response.overall.judge_failures == response.overall.unparseable == 0
               for response in outcome.responses)

    task_prompts = json.dumps([entry["messages"] for entry in role_models["task"].history])
    judge_prompts = json.dumps([entry["messages"] for entry in role_models["judge"].history])
    assert "dialogue-0" in task_prompts
    assert [marker for marker in GOLD_MARKERS if marker in task_prompts] == []
    assert "GOLD-CURRENT-PREFERENCE" in judge_prompts  # the graders are the only readers of the gold

    rows = [json.loads(line) for line in (tmp_path / "inference-all.jsonl").read_text().splitlines()]
    assert [row["f1"] for row in rows] == pytest.approx([0.75, 0.75])
    assert len((tmp_path / "responses.jsonl").read_text().splitlines()) == 6
    table = format_evaluation(outcome)
    assert "F1 (micro)" in table and "respond inferred: judge" in table
    assert re.search(r"^baseline \(no user context\)\s+all\s+7\.00", table, re.MULTILINE)
    assert "respond baseline: generate" in table


def test_only_the_gold_response_method_hands_the_gold_preference_to_the_generator(role_models, tmp_path):
    options = EvaluateOptions(output_dir=tmp_path, responses=["gold"])
    outcome = evaluate_in_run(Settings(threads=1), options, [marked_instance()])
    generator_prompts = json.dumps([entry["messages"] for entry in role_models["task"].history[-1:]])
    assert "GOLD-CURRENT-PREFERENCE" in generator_prompts  # the ceiling: by definition it is given the gold
    assert "GOLD-CHECK" not in generator_prompts and outcome.responses[0].score.mean == 7


def test_a_failed_inference_is_left_out_of_the_scores_and_counted(role_models, tmp_path, monkeypatch):
    class Failing(dspy.Module):
        def forward(self, sessions, current_request):
            raise RuntimeError("the model answered nonsense")

    monkeypatch.setattr(cupid, "_inferrers", lambda session, options: {"failing": Failing()})
    import prefcraft.engine.evaluation

    monkeypatch.setattr(prefcraft.engine.evaluation, "check_reachable", lambda model: None)
    options = EvaluateOptions(output_dir=tmp_path, responses=[])
    outcome = evaluate_in_run(Settings(threads=1), options, [marked_instance()])
    (inference,) = outcome.inference
    assert inference.overall.inference_failures == 1 and inference.results[0].failed == "inference"
    assert inference.overall.instances == 0 and math.isnan(inference.overall.recall.mean)
    assert inference.results[0].recall is None


class FailingGrader(dspy.Module):
    def __init__(self, decompose_max_tokens=None):
        super().__init__()

    def forward(self, **inputs):
        raise RuntimeError("the matcher answered nonsense")


def test_a_failed_matcher_keeps_the_inferred_items_and_counts_them_not_covered(role_models, tmp_path, monkeypatch):
    monkeypatch.setattr(cupid, "PreferenceMatch", FailingGrader)
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=[])
    (inference,) = evaluate_in_run(Settings(threads=1), options, [marked_instance()]).inference
    # The decomposer alone still gives REPLY's 2-item checklist: 2 inferred and 2 gold items, none covered.
    (result,) = inference.results
    assert result.failed == "matching" and result.checklist == REPLY["checklist"]
    assert result.reason == "RuntimeError: the matcher answered nonsense"
    assert result.predicted_coverage == [0.0, 0.0] and result.true_coverage == [0.0, 0.0]
    assert inference.overall.instances == 1 and inference.overall.matcher_failures == 1
    assert inference.overall.precision.mean == 0.0 and inference.costs["redecompose"].usage.calls == 1


def test_a_failed_decomposition_counts_as_a_failed_inference(role_models, tmp_path, monkeypatch):
    monkeypatch.setattr(cupid, "PreferenceMatch", FailingGrader)
    monkeypatch.setattr(cupid, "decomposer", lambda cap: dspy.Predict(dspy.Signature("preference -> missing_field")))
    role_models["judge"] = DummyLM([{"other": "x"}] * 20, adapter=dspy.JSONAdapter())
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=[])
    (inference,) = evaluate_in_run(Settings(threads=1), options, [marked_instance()]).inference
    assert inference.results[0].failed == "decomposition" and inference.results[0].reason is not None
    assert inference.overall.instances == 0 and inference.overall.inference_failures == 1


def test_unparseable_and_failed_judge_scores_count_zero(role_models, tmp_path, monkeypatch):
    judged = iter([{"score": "8.5"}, {"score": "great"}])

    class ScriptedJudge(dspy.Module):
        def __init__(self, prompt):
            super().__init__()

        def forward(self, **inputs):
            reply = next(judged, None)
            if reply is None:
                raise RuntimeError("the judge call failed")
            return dspy.Prediction(**reply)

    monkeypatch.setattr(cupid, "ResponseJudge", ScriptedJudge)
    instances = [marked_instance(), marked_instance(sessions=2), marked_instance(sessions=1)]
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=["gold"])
    outcome = evaluate_in_run(Settings(threads=1), options, instances)
    (response,) = outcome.responses
    assert [result.score for result in response.results] == [8.0, 0.0, 0.0]
    assert [result.failed for result in response.results] == [None, "unparseable score", "judging"]
    assert response.score.mean == pytest.approx(8 / 3)
    assert (response.overall.unparseable, response.overall.judge_failures) == (1, 1)
    assert "judge failed (0)" in format_evaluation(outcome)


def of_type(kind, request, row=0):
    """`marked_instance()` as an instance of type `kind` whose current request is `request`."""
    return marked_instance().model_copy(update={"instance_id": f"p/{kind}/{row}", "instance_type": kind,
                                                "current_request": request})


def test_response_scores_are_reported_per_instance_type_as_the_reference_aggregates_them(
    role_models, tmp_path, monkeypatch
):
    """Each type's score is the mean over that type's responses, failures counted as for the overall score: a failed
    or unparseable judgment scores 0, a failed generation is left out."""
    class ScriptedGenerator(dspy.Module):
        def forward(self, request, preference=""):
            if request == "generation fails":
                raise RuntimeError("the task model failed")
            return dspy.Prediction(response=request)

    judged = {"eight": "8", "six and a half": "6.5/10", "unreadable": "n/a", "ten": "10"}

    class ScriptedJudge(dspy.Module):
        def __init__(self, prompt):
            super().__init__()

        def forward(self, request, response, preference, checklist):
            if response not in judged:
                raise RuntimeError("the judge call failed")
            return dspy.Prediction(score=judged[response])

    monkeypatch.setattr(cupid, "ResponseGenerator", ScriptedGenerator)
    monkeypatch.setattr(cupid, "ResponseJudge", ScriptedJudge)
    monkeypatch.setattr(evaluation, "check_reachable", lambda model: None)
    instances = [of_type("consistent", "eight"), of_type("consistent", "judge fails", 1),
                 of_type("contrastive", "six and a half"), of_type("contrastive", "unreadable", 1),
                 of_type("changing", "ten"), of_type("changing", "generation fails", 1)]
    tracker = FakeTracker()
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=["gold"])
    (response,) = evaluate_in_run(Settings(threads=1), options, instances, tracker).responses

    # All: (8 + 0 + 6 + 0 + 10) / 5; consistent (8 + 0) / 2; contrastive (6 + 0) / 2; changing 10 / 1.
    assert response.score.mean == pytest.approx(4.8) and response.score.n == 5
    assert {kind: scores.score.mean for kind, scores in response.by_type.items()} == pytest.approx(
        {"consistent": 4.0, "contrastive": 3.0, "changing": 10.0})
    assert [(scores.judge_failures, scores.unparseable, scores.generation_failures)
            for scores in response.by_type.values()] == [(1, 0, 0), (0, 1, 0), (0, 0, 1)]
    assert (response.overall.judge_failures, response.overall.unparseable, response.overall.generation_failures) == (
        1, 1, 1)

    logged = tracker.named("respond-gold").metrics
    assert logged["score"] == pytest.approx(4.8) and logged["responses"] == 5.0
    assert (logged["consistent_score"], logged["contrastive_score"], logged["changing_score"]) == pytest.approx(
        (4.0, 3.0, 10.0))
    assert logged["consistent_judge_failures"] == logged["contrastive_unparseable_scores"] == 1.0
    assert logged["changing_generation_failures"] == 1.0 and logged["changing_responses"] == 1.0
    rows = [json.loads(line) for line in (tmp_path / "responses.jsonl").read_text().splitlines()]
    assert [row["instance_type"] for row in rows] == [instance.instance_type for instance in instances]
    table = format_evaluation(EvaluationOutcome("data", 6, 0, "all", [], [response], tmp_path))
    assert re.search(r"gold\s+contrastive\s+3\.00 \[0\.00, 6\.00\] \(n=2\)\s+0\s+1\s+0\s+0", table)
    assert re.search(r"gold\s+changing\s+10\.00 \(n=1\)\s+0\s+0\s+0\s+1", table)


@pytest.mark.parametrize(("prompt", "rubric", "absent"), [
    ("reference", "- 10: Exceptional", "completely perfect"),
    ("paper", "10 means completely perfect", "Exceptional"),
])
def test_the_judge_prompt_option_chooses_the_reference_codes_prompt_or_the_papers(
    role_models, tmp_path, prompt, rubric, absent
):
    if prompt == "paper":
        role_models["judge"] = DummyLM([REPLY] * 20, adapter=dspy.JSONAdapter())  # Figure 16 asks for no label
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=["gold"], judge_prompt=prompt)
    outcome = evaluate_in_run(Settings(threads=1), options, [marked_instance()])
    judge_system = role_models["judge"].history[-1]["messages"][0]["content"]
    assert rubric in judge_system and absent not in judge_system
    assert ("`label`" in judge_system) is (prompt == "reference")
    assert outcome.responses[0].score.mean == 7 and outcome.responses[0].overall.judge_failures == 0
    assert outcome.judge_prompt == prompt and ("Figure 16" in format_evaluation(outcome)) is (prompt == "paper")


def with_current_preference_in(instance, *numbers):
    """`instance` with the prior sessions at 0-based `numbers` sharing its current contextual preference."""
    row = instance.model_dump()
    for number in numbers:
        row["prior_interactions"][number]["contextual_preference"] = row["current_contextual_preference"]
    return type(instance).model_validate(row)


def test_the_oracle_setting_gives_only_the_sessions_that_share_the_current_preference(role_models, tmp_path):
    relevant = with_current_preference_in(marked_instance(sessions=3), 1)
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=["sessions"], oracle_sessions=True)
    outcome = evaluate_in_run(Settings(threads=1), options, [relevant, marked_instance(sessions=2)])

    assert outcome.instances == 1 and outcome.oracle_left_out == 1  # the second has no session with its preference
    inference_prompt, response_prompt = (json.dumps(entry["messages"]) for entry in role_models["task"].history)
    for prompt in (inference_prompt, response_prompt):
        assert "dialogue-1" in prompt and "dialogue-0" not in prompt and "dialogue-2" not in prompt
    assert "GOLD-CURRENT-PREFERENCE" not in inference_prompt + response_prompt
    assert "Oracle setting" in format_evaluation(outcome) and "left out: 1" in format_evaluation(outcome)


def test_responses_from_summaries_summarise_the_log_first(role_models, tmp_path):
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=["summaries"])
    outcome = evaluate_in_run(Settings(threads=1), options, [marked_instance()])
    (response,) = outcome.responses
    assert response.method == "summaries" and response.score.mean == 7
    assert response.costs["generate"].usage.calls == 2  # the summaries' call and the response's, one instance
    *_, summarise, generate = (json.dumps(entry["messages"]) for entry in role_models["task"].history)
    assert "dialogue-0" in summarise and "Summaries of the user's past sessions" in generate
    assert "dialogue-0" not in generate


def test_the_oracle_setting_with_no_relevant_session_anywhere_is_one_clear_error(role_models, tmp_path):
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=[], oracle_sessions=True)
    with pytest.raises(cupid.ConfigError, match="oracle setting has nothing to give"):
        evaluate_instances(Settings(threads=1), StepTracker(FakeTracker()), options, [marked_instance()])


def test_outside_the_oracle_setting_every_session_reaches_the_inferrer(role_models, tmp_path):
    relevant = with_current_preference_in(marked_instance(sessions=3), 1)
    options = EvaluateOptions(no_shipped=True, output_dir=tmp_path, responses=[])
    outcome = evaluate_in_run(Settings(threads=1), options, [relevant])
    assert outcome.oracle_left_out is None and "Oracle setting" not in format_evaluation(outcome)
    prompt = json.dumps(role_models["task"].history[0]["messages"])
    assert all(f"dialogue-{number}" in prompt for number in range(3))


def test_select_instances_skips_bad_rows_when_asked(tmp_path):
    from tests.components.cupid.test_cupid_loader import real_row, write_jsonl

    path = write_jsonl(tmp_path / "data.jsonl", [real_row("a"), real_row("b", sessions=0), real_row("c")])
    instances, skipped = select_instances(EvaluateOptions(data=str(path), skip_invalid=True), "all")
    assert [i.persona_id for i in instances] == ["a", "c"] and skipped == 1


def test_split_all_evaluates_every_instance_with_no_persona_split(tmp_path):
    from tests.components.cupid.test_cupid_loader import real_row, write_jsonl

    rows = [real_row(persona, kind) for persona in "abcdef" for kind in ("consistent", "contrastive", "changing")]
    options = EvaluateOptions(data=str(write_jsonl(tmp_path / "data.jsonl", rows)))
    assert options.split == "test"  # the default: the 2 test personas, 6 instances
    test, _ = select_instances(options, options.split)
    every, _ = select_instances(options, "all")
    assert len({i.persona_id for i in test}) == 2 and len(test) == 6
    assert [(i.persona_id, i.instance_type) for i in every] == [(row["persona_id"], row["instance_type"])
                                                                 for row in rows]


def test_the_paper_scale_experiment_evaluates_every_instance_with_the_reference_judge():
    experiment = load_experiment(Path(__file__).parents[3] / "experiments" / "cupid-main.toml")
    options = EvaluateOptions.model_validate(experiment.steps["evaluate"])
    assert (options.split, options.judge_prompt, options.data) == ("all", "reference", "kixlab/CUPID")
    assert options.responses == ["sessions", "gold"]


def test_the_former_variant_options_are_taken_for_one_release_naming_the_inferrer_ones(caplog, tmp_path):
    parser = make_parser()
    assert parser.parse_args(["cupid", "compile", "--inferrer", "relevant"]).inferrer == "relevant"
    assert parser.parse_args(["cupid", "evaluate", "--inferrers", "all", "relevant"]).inferrers == ["all", "relevant"]
    assert "is now" not in caplog.text
    assert parser.parse_args(["cupid", "compile", "--variant", "summaries"]).inferrer == "summaries"
    assert "--variant is now --inferrer" in caplog.text
    assert parser.parse_args(["cupid", "demo", "--variants", "relevant"]).inferrers == ["relevant"]
    assert "--variants is now --inferrers" in caplog.text
    experiment = tmp_path / "cupid.toml"
    experiment.write_text('name = "t"\ncomponent = "cupid"\n[steps.evaluate]\nvariants = ["relevant"]\n')
    assert load_experiment(experiment).steps["evaluate"] == {"inferrers": ["relevant"]}
    assert "option variants is now inferrers" in caplog.text


def test_the_former_name_of_the_baseline_response_is_taken_for_one_release(caplog, tmp_path):
    parser = make_parser()
    assert parser.parse_args(["cupid", "evaluate"]).responses == ["baseline", "sessions", "inferred", "gold"]
    assert parser.parse_args(["cupid", "evaluate", "--responses", "baseline", "gold"]).responses == ["baseline", "gold"]
    assert "is now 'baseline'" not in caplog.text
    assert parser.parse_args(["cupid", "demo", "--responses", "none", "gold"]).responses == ["baseline", "gold"]
    assert "'none' is now 'baseline'" in caplog.text
    caplog.clear()
    assert EvaluateOptions(responses=["none", "inferred"]).responses == ["baseline", "inferred"]  # prefcraft.run's
    assert "'none' is now 'baseline'" in caplog.text
    caplog.clear()
    experiment = tmp_path / "cupid.toml"
    experiment.write_text('name = "t"\ncomponent = "cupid"\n[steps.evaluate]\nresponses = ["none", "gold"]\n')
    assert load_experiment(experiment).steps["evaluate"] == {"responses": ["baseline", "gold"]}
    assert "'none' is now 'baseline'" in caplog.text


def test_the_charts_and_the_demo_compare_against_the_baseline_response():
    def child(method, score):
        return RunRecord(f"id-{method}", f"respond-{method}", "FINISHED", 0, 1, {}, {"score": score}, "parent")

    run = RunRecord("parent", "cupid-evaluate", "FINISHED", 0, 1, {}, {}, None,
                    [child("baseline", 5.0), child("inferred", 7.0), child("none", 4.0)])
    (_, responses) = CHARTS.comparisons(run)
    # "none": a run recorded before the rename
    assert [(row.label, row.baseline) for row in responses.rows] == [
        ("baseline", True), ("inferred", False), ("none", True)]
    (_, per_type) = CHARTS.spreads(run)
    assert [row.label for row in per_type.rows if row.baseline] == ["baseline", "none"]

    outcome = SimpleNamespace(responses=[SimpleNamespace(method=method, score=SimpleNamespace(mean=score))
                                         for method, score in (("baseline", 5.0), ("inferred", 7.0))])
    comparison = compare(outcome)
    assert (comparison.baseline, comparison.baseline_score, comparison.personalized_score) == (
        "baseline (no preference)", 5.0, 7.0)


def test_cli_parses_every_step_and_defaults_to_the_paper_budget():
    parser = make_parser()
    compile_args = parser.parse_args(["cupid", "compile"])
    assert (compile_args.candidates, compile_args.trials, compile_args.inferrer) == (20, 30, "all")
    evaluate_args = parser.parse_args(["cupid", "evaluate", "--inferrers", "all", "relevant", "--responses"])
    assert evaluate_args.inferrers == ["all", "relevant"] and evaluate_args.responses == []
    summaries_args = parser.parse_args(["cupid", "evaluate", "--inferrers", "summaries", "summaries-per-session"])
    assert summaries_args.inferrers == ["summaries", "summaries-per-session"] and not summaries_args.oracle_sessions
    assert parser.parse_args(["cupid", "evaluate", "--oracle-sessions"]).oracle_sessions
    assert (evaluate_args.split, evaluate_args.judge_prompt) == ("test", "reference")
    paper_args = parser.parse_args(["cupid", "evaluate", "--split", "all", "--judge-prompt", "paper"])
    assert (paper_args.split, paper_args.judge_prompt) == ("all", "paper")
    assert parser.parse_args(["cupid", "evaluate", "--responses", "summaries", "summaries-per-session"]).responses == [
        "summaries", "summaries-per-session"]
    demo_args = parser.parse_args(["cupid", "demo"])
    assert not hasattr(demo_args, "data")  # the demo reads the bundled sample only
    assert demo_args.max_instances == 3 and demo_args.task_timeout_s == 600.0


def test_bad_data_fails_with_a_clear_error_before_any_server_starts(tmp_path, capsys):
    from tests.components.cupid.test_cupid_loader import real_row, write_jsonl

    path = write_jsonl(tmp_path / "data.jsonl", [real_row(checklist_items=5)])
    assert main(["cupid", "evaluate", "--data", str(path), "--split", "all", "--no-serve"]) == 2
    error = capsys.readouterr().err
    assert "row 0, field 'current_checklist'" in error and "at most 4 items" in error


@pytest.mark.server
def test_cupid_evaluate_end_to_end_on_the_embedded_model(embedded_server, tmp_path, capsys):
    """Real calls, tiny: one bundled test instance, the all-sessions inferrer, a response with the gold preference.
    A re-run is answered by DSPy's cache: its runs record no LM calls."""
    flags = ["--no-serve", "--task-api-base", embedded_server.base_url, "--task-max-tokens", "128",
             "--task-timeout-s", "300", "--threads", "2", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db",
             "--cache-dir", str(tmp_path / "cache"), "--output-dir", str(tmp_path / "out"), "--max-instances", "1",
             "--no-shipped", "--responses", "gold"]
    assert main(["cupid", "evaluate", *flags]) == 0
    out = capsys.readouterr().out
    assert "F1 (micro)" in out and "respond gold: judge" in out and SYNTHETIC_NOTE in out
    rows = [json.loads(line) for line in (tmp_path / "out" / "inference-all.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and all(0.0 <= row["f1"] <= 1.0 for row in rows)
    assert all(row["failed"] is None for row in rows), rows

    assert main(["cupid", "evaluate", *flags]) == 0
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list", order_by=["start_time ASC"])
    parents = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    assert [run.info.run_name for run in parents] == ["cupid-evaluate"] * 2
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parents[1].info.run_id]
    assert {"infer-all", "respond-gold"} <= {run.info.run_name for run in children}
    first_children = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert sum(run.data.metrics.get("infer_lm_calls", 0) for run in first_children) > 0
    calls = {name: value for run in children for name, value in run.data.metrics.items() if name.endswith("lm_calls")}
    assert calls and not any(calls.values()), calls
