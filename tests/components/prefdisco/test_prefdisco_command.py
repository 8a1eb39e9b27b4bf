"""`prefcraft prefdisco` without a model server (scripted LMs), and once end to end on the embedded server."""

import json
from contextlib import nullcontext
from functools import partial

import dspy
import mlflow
import pytest
from dspy.utils import DummyLM

from prefcraft import runner
from prefcraft.commands.main import main, make_parser
from prefcraft.components.component import StepRun
from prefcraft.components.prefdisco import evaluation as prefdisco
from prefcraft.components.prefdisco.build import (
    SAMPLE_PROBLEMS,
    build_scenario_file,
    format_build,
    read_problems,
)
from prefcraft.components.prefdisco.commands import COMPONENT
from prefcraft.components.prefdisco.compilation import compile_run_params, load_compiled_on
from prefcraft.components.prefdisco.data import SAMPLE_SCENARIOS, load_scenarios
from prefcraft.components.prefdisco.evaluation import (
    BASELINE,
    DISCOVERY,
    ORACLE,
    compiled_asker,
    evaluation_params,
    load_evaluated,
    select_scenarios,
)
from prefcraft.components.prefdisco.options import BuildOptions, CompileOptions, EvaluateOptions
from prefcraft.components.prefdisco.report import format_evaluation
from prefcraft.engine.evaluation import in_chunks
from prefcraft.errors import ConfigError
from prefcraft.experiments.files import load_experiment
from prefcraft.optimizers import artifacts
from prefcraft.optimizers.artifacts import register_compiled, save_compiled
from prefcraft.optimizers.compile_step import compile_params
from prefcraft.optimizers.options import optimizer_config
from prefcraft.optimizers.prefdisco import PROGRAM_NAME
from prefcraft.programs.prefdisco import CORRECTNESS_TEMPERATURE, QuestionAsker
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, data_digest
from tests.fakes import FakeTracker

# One reply holding every output field of every PrefDisco signature; each call keeps its own fields.
REPLY = {"action": "ask", "question": "How detailed?", "response": "It is 8.", "final_answer": "8",
         "thought": "Say it short.", "reply": "Brief.", "grade": 3, "justification": "Partly.", "correct": True}


def offline(monkeypatch, lm):
    monkeypatch.setattr(prefdisco, "lm_context", lambda *args: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))


def test_the_three_conditions_run_and_every_dialogue_is_written(monkeypatch, tmp_path):
    lm = DummyLM([REPLY] * 500, adapter=dspy.JSONAdapter())
    offline(monkeypatch, lm)
    tracker, printed = FakeTracker(), []
    monkeypatch.setattr(runner, "model_session", nullcontext)  # no server: the scripted LM answers
    monkeypatch.setattr(runner, "start_tracking", lambda session: tracker)
    options = EvaluateOptions(max_scenarios=3, max_turns=2, no_shipped=True, output_dir=tmp_path)
    scenarios = select_scenarios(options, "test")
    outcome = runner.run_step("prefdisco", "evaluate", options, Settings(threads=1), printed.append)
    rows = [json.loads(line) for line in outcome.results_path.read_text().splitlines()]
    assert [row["condition"] for row in rows] == [BASELINE] * 3 + [ORACLE] * 3 + [DISCOVERY] * 3
    discovery = rows[-1]
    assert len(discovery["turns"]) == 2 and discovery["turns"][0] == {"question": "How detailed?", "reply": "Brief."}
    assert discovery["hidden_profile"] and discovery["grades"] == [3] * len(discovery["grades"])
    assert discovery["pref_align"] == pytest.approx(3.0) and discovery["correct"] is True
    # Every grade is 3, so Oracle equals Baseline everywhere: NormAlign is undefined for all, and counted.
    [summary] = [s for s in outcome.summaries if s.task == "all" and s.condition == DISCOVERY]
    assert summary.norm_align.undefined == summary.norm_align.scenarios == 3 and summary.questions == 2
    table = format_evaluation(outcome)
    assert "3/3" in table and "- (undefined)" in table and printed == [table]
    summary_file = json.loads((tmp_path / "summary.json").read_text())
    assert summary_file["scenarios"] == 3
    assert summary_file["norm_align"][DISCOVERY] == {s.scenario_id: None for s in scenarios}
    # Calls: per scenario 1 + 1 answers, 2 x (asker + simulator) + 1 answer, and (criteria + 1) grading calls x 3.
    graded_calls = 3 * sum(len(s.criteria) + 1 for s in scenarios)
    assert len(lm.history) == 3 * (1 + 1 + 5) + graded_calls
    # One run, opened by the runner with the step's params, with a child run per condition; the dialogues and the
    # summary are logged to it once each.
    assert [run.name for run in tracker.runs] == ["prefdisco-evaluate", BASELINE, ORACLE, DISCOVERY]
    run = tracker.named("prefdisco-evaluate")
    assert not run.nested and all(child.nested for child in tracker.runs[1:])
    assert run.params["scenarios"] == 3 and run.params["split"] == "test" and run.params["compiled"] == ""
    assert run.params["max_turns"] == 2 and "task_model" in run.params
    assert run.files == [outcome.results_path, tmp_path / "summary.json"]
    assert run.metrics["all_discovery_questions"] == 2 and "generation_lm_calls" in tracker.named(DISCOVERY).metrics


class FailsOnOneProblem(dspy.Module):
    """The Baseline responder, except that one problem's call fails as a server error would."""

    def __init__(self, failing_problem):
        super().__init__()
        self.responder, self.failing_problem = prefdisco.Responder(), failing_problem

    def forward(self, problem, user_preferences):
        if problem == self.failing_problem:
            raise RuntimeError("500 from the server")
        return self.responder(problem=problem, user_preferences=user_preferences)


def test_a_scenario_whose_call_fails_is_kept_with_its_reason_and_the_others_are_scored(monkeypatch):
    offline(monkeypatch, DummyLM([REPLY] * 100, adapter=dspy.JSONAdapter()))
    scenarios = select_scenarios(EvaluateOptions(max_per_task=1), "test")  # three problems
    program = FailsOnOneProblem(scenarios[1].question)
    written = []
    scores, costs = prefdisco.run_condition(Settings(threads=1), BASELINE, program, prefdisco._baseline_example,
                                            scenarios, CORRECTNESS_TEMPERATURE, written.extend)
    assert [row["failed"] for row in written] == [None, "generation", None] and costs["generation"].failures == 1
    assert written[1]["failure"] == "RuntimeError: 500 from the server" and written[1]["pref_align"] is None
    assert written[0]["failure"] is None and written[0]["pref_align"] is not None
    assert [score.pref_align for score in scores] == [row["pref_align"] for row in written]


def test_a_condition_runs_in_chunks_writing_each_chunks_rows_when_it_ends_and_keeping_only_scores(monkeypatch):
    offline(monkeypatch, DummyLM([REPLY] * 100, adapter=dspy.JSONAdapter()))
    monkeypatch.setattr(prefdisco, "in_chunks", partial(in_chunks, size=2))
    scenarios = select_scenarios(EvaluateOptions(max_per_task=1), "test")  # three problems: chunks of 2 and 1
    batches = []
    scores, costs = prefdisco.run_condition(Settings(threads=1), ORACLE, prefdisco.Responder(),
                                            prefdisco._oracle_example, scenarios, CORRECTNESS_TEMPERATURE,
                                            lambda rows: batches.append(list(rows)))
    assert [[row["scenario_id"] for row in batch] for batch in batches] == [[s.scenario_id for s in scenarios[:2]],
                                                                            [scenarios[2].scenario_id]]
    assert all(row["hidden_profile"] and row["response"] for batch in batches for row in batch)
    assert [score.scenario_id for score in scores] == [s.scenario_id for s in scenarios]
    assert not hasattr(scores[0], "response") and costs["generation"].failures == costs["grading"].failures == 0


def _row(task: str, scenario: str, condition: str, pref_align: float | None, missing: int = 0):
    return prefdisco.ResponseScore(scenario, task, pref_align, True, None if pref_align is not None else "grading", 0,
                                   missing)


def test_the_summary_gives_the_papers_norm_align_per_task_and_the_share_of_negative_tasks():
    # math: D 3, 2 / B 2, 3 / O 4, 5 -> of means (2.5 - 2.5) / (4.5 - 2.5) = 0; per scenario 50 and -50.
    # social: D 2 / B 3 / O 4 -> -100 (negative). So 1 of 2 tasks is negative, as in the paper's 61 of 210.
    table = {"m1": ("math", 3.0, 2.0, 4.0), "m2": ("math", 2.0, 3.0, 5.0), "s1": ("social", 2.0, 3.0, 4.0)}
    results = {condition: [_row(task, sid, condition, scores[index], missing=int(condition == DISCOVERY))
                           for sid, (task, *scores) in table.items()]
               for index, condition in enumerate((DISCOVERY, BASELINE, ORACLE))}
    results[ORACLE].append(_row("social", "s2", ORACLE, None))  # a failed grading: left out, counted
    summaries = {(s.task, s.condition): s for s in prefdisco.summarize(results, seed=0)}
    math_row, social_row, overall = (summaries[(task, DISCOVERY)] for task in ("math", "social", "all"))
    assert math_row.norm_align.of_means.mean == pytest.approx(0.0)
    assert math_row.norm_align.per_scenario_negative_share.mean == pytest.approx(0.5)
    assert social_row.norm_align.of_means.mean == pytest.approx(-1.0)
    assert overall.negative_tasks == (1, 2) and math_row.negative_tasks is None
    assert overall.missing_grades == 3 and summaries[("all", ORACLE)].failures == 1
    # Over all tasks, the means: D 7/3, B 8/3, O 13/3 -> (-1/3) / (5/3) = -0.2.
    assert overall.norm_align.of_means.mean == pytest.approx(-0.2)


def test_splits_keep_all_personas_of_a_problem_together_and_do_not_overlap():
    splits = {split: select_scenarios(EvaluateOptions(), split) for split in ("train", "val", "test")}
    problems = {split: {s.problem_id for s in scenarios} for split, scenarios in splits.items()}
    assert sum(map(len, splits.values())) == len(load_scenarios(SAMPLE_SCENARIOS))
    assert not (problems["train"] & problems["val"]) and not (problems["val"] & problems["test"])
    assert len(splits["test"]) == 6 and len(splits["val"]) == 6
    one_each = select_scenarios(EvaluateOptions(max_per_task=1), "test")
    assert [s.task for s in one_each] == ["math", "science", "social"]
    with pytest.raises(ConfigError):
        select_scenarios(EvaluateOptions(), "dev")


def test_the_builder_is_seeded_and_writes_loadable_scenarios(tmp_path):
    problems = read_problems(SAMPLE_PROBLEMS)
    first = build_scenario_file(problems, BuildOptions(output=tmp_path / "a.jsonl"), seed=3).path.read_bytes()
    again = build_scenario_file(problems, BuildOptions(output=tmp_path / "b.jsonl"), seed=3).path.read_bytes()
    other = build_scenario_file(problems, BuildOptions(output=tmp_path / "c.jsonl"), seed=4).path.read_bytes()
    assert first == again != other
    scenarios = load_scenarios(tmp_path / "a.jsonl")
    assert len(scenarios) == 24 and len({s.persona["id"] for s in scenarios}) > 2
    bundled = build_scenario_file(problems, BuildOptions(output=tmp_path / "d.jsonl"), seed=0).path.read_bytes()
    assert SAMPLE_SCENARIOS.read_bytes() == bundled  # the bundled file is regenerable


def test_building_is_one_tracked_run_with_a_child_run_per_task_and_runs_no_model(monkeypatch, tmp_path):
    step = COMPONENT.steps["build-scenarios"]
    assert not step.models and step.tracked and step.run_name == "prefdisco-build-scenarios"
    options, tracker, settings = BuildOptions(output=tmp_path / "s.jsonl"), FakeTracker(), Settings(seed=3)
    monkeypatch.setattr(runner, "start_tracking", lambda session: tracker)
    outcome = runner.run_step("prefdisco", "build-scenarios", options, settings, lambda line: None)
    assert outcome.path.read_bytes() == build_scenario_file(
        read_problems(SAMPLE_PROBLEMS), BuildOptions(output=tmp_path / "again.jsonl"), seed=3).path.read_bytes()
    run = tracker.named("prefdisco-build-scenarios")
    assert not run.nested and run.params["seed"] == 3 and run.params["problems"] == str(SAMPLE_PROBLEMS)
    assert run.metrics == {"scenarios": 24, "rejected_personas": outcome.rejected_personas}
    assert run.files == [outcome.path]
    assert [(child.name, child.nested, child.metrics) for child in tracker.runs[1:]] == [
        (f"task-{task}", True, {"scenarios": 8}) for task in ("math", "science", "social")]
    assert format_build(outcome).startswith("wrote 24 SYNTHETIC scenarios (12 problems x 2 of 8 personas; ")


def test_each_step_declares_its_run_and_the_compile_runs_params_come_from_its_data(tmp_path):
    assert {name: step.run_name for name, step in COMPONENT.steps.items()} == {
        "build-scenarios": "prefdisco-build-scenarios", "compile": "prefdisco-compile",
        "evaluate": "prefdisco-evaluate", "demo": "prefdisco-evaluate"}
    assert COMPONENT.run_names == ("prefdisco-build-scenarios", "prefdisco-compile", "prefdisco-evaluate")
    options, settings = CompileOptions(max_turns=2, output=tmp_path / "asker.json"), Settings()
    train, val = load_compiled_on(options)
    params = compile_run_params(options, StepRun(settings, settings, StepTracker(FakeTracker()), print, (train, val)))
    assert params == compile_params(settings, PROGRAM_NAME, optimizer_config(options, settings),
                                    {"data": str(SAMPLE_SCENARIOS), "data_digest": data_digest(SAMPLE_SCENARIOS),
                                     "train": len(train), "val": len(val), "max_turns": 2})


def test_the_evaluate_runs_params_name_the_compiled_asker_and_warn_nothing_the_work_warns_again(
        monkeypatch, tmp_path, caplog):
    (tmp_path / "compiled").mkdir()
    monkeypatch.setattr(artifacts, "COMPILED_DIR", tmp_path / "compiled")
    monkeypatch.setattr(artifacts, "COMPILED_INDEX", tmp_path / "compiled" / "index.json")
    settings = Settings()
    shipped = save_compiled(QuestionAsker(2), tmp_path / "compiled" / "asker.json", program_name=PROGRAM_NAME,
                            won=True)
    assert register_compiled(PROGRAM_NAME, settings.task.model, shipped)
    options = EvaluateOptions(max_scenarios=2)
    run = StepRun(settings, settings, StepTracker(FakeTracker()), print, load_evaluated(options))
    params = evaluation_params(options, run)
    assert params["compiled"] == str(shipped) and params["scenarios"] == 2 and params["program"] == PROGRAM_NAME
    assert evaluation_params(EvaluateOptions(max_scenarios=2, no_shipped=True), run)["compiled"] == ""
    save_compiled(QuestionAsker(2), shipped, program_name=PROGRAM_NAME, won=False, verdict="no better")
    assert evaluation_params(options, run)["compiled"] == "" and "written over" not in caplog.text
    assert compiled_asker(options, settings) is None and caplog.text.count("written over") == 1


def test_the_command_line_builds_each_step():
    parser = make_parser()
    demo = parser.parse_args(["prefdisco", "demo"])
    assert demo.max_turns == 2 and demo.split == "test" and not demo.no_shipped and demo.max_per_task == 1
    compile_args = parser.parse_args(["prefdisco", "compile", "--trials", "3"])
    assert compile_args.trials == 3 and compile_args.candidates == 20
    evaluate = parser.parse_args(["prefdisco", "evaluate", "--forced-questions", "2", "--collaborative"])
    assert evaluate.forced_questions == 2 and evaluate.collaborative


def test_the_former_per_task_option_is_taken_for_one_release_naming_max_per_task(caplog, tmp_path):
    parser = make_parser()
    assert parser.parse_args(["prefdisco", "evaluate", "--max-per-task", "3"]).max_per_task == 3
    assert "is now" not in caplog.text
    assert parser.parse_args(["prefdisco", "compile", "--per-task", "2"]).max_per_task == 2
    assert "--per-task is now --max-per-task" in caplog.text
    experiment = tmp_path / "prefdisco.toml"
    experiment.write_text('name = "t"\ncomponent = "prefdisco"\n[steps.evaluate]\nper_task = 1\n')
    assert load_experiment(experiment).steps["evaluate"] == {"max_per_task": 1}
    assert "option per_task is now max_per_task" in caplog.text
    assert EvaluateOptions(per_task=1).max_per_task == 1


def test_a_bad_scenario_file_fails_before_any_server_starts(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "metadata"}\n{"type": "personalized_problem"}\n')
    assert main(["prefdisco", "evaluate", "--data", str(bad)]) == 2
    assert f"{bad}, row 1, field 'problem_id'" in capsys.readouterr().err


@pytest.mark.server
def test_prefdisco_demo_end_to_end_on_the_embedded_server(embedded_server, tmp_path, capsys):
    """Tiny but real: one scenario, one question, three conditions, graded; then a re-run served from the cache. The
    default max_tokens (512) holds every reply the small-model profile bounds: with 200, a reply that repeats itself
    ("20, 20, ...") ran out of tokens inside the response, before its final answer."""
    flags = ["--no-serve", "--task-api-base", embedded_server.base_url,
             "--task-timeout-s", "300", "--threads", "2", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db",
             "--cache-dir", str(tmp_path / "cache"), "--output-dir", str(tmp_path / "out"), "--max-scenarios", "1",
             "--max-turns", "1", "--forced-questions", "1", "--no-shipped"]
    assert main(["prefdisco", "demo", *flags]) == 0
    out = capsys.readouterr().out
    assert "PrefAlign" in out and "discovery" in out
    rows = [json.loads(line) for line in (tmp_path / "out" / "dialogues.jsonl").read_text().splitlines()]
    assert [row["condition"] for row in rows] == [BASELINE, ORACLE, DISCOVERY]
    [discovery] = [row for row in rows if row["condition"] == DISCOVERY]
    assert discovery["failed"] is None and len(discovery["turns"]) == 1 and discovery["turns"][0]["reply"]
    assert all(1 <= grade <= 5 for row in rows for grade in row["grades"])

    assert main(["prefdisco", "demo", *flags]) == 0  # a re-run: every answer from DSPy's cache
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list", order_by=["start_time ASC"])
    parents = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    assert [run.info.run_name for run in parents] == ["prefdisco-evaluate"] * 2
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert {run.info.run_name for run in children} >= {"baseline", "oracle", "discovery"}
    first_calls = sum(v for run in children for k, v in run.data.metrics.items() if k.endswith("lm_calls"))
    rerun = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parents[1].info.run_id]
    rerun_calls = [v for run in rerun for k, v in run.data.metrics.items() if k.endswith("lm_calls")]
    assert first_calls > 0 and rerun_calls and not any(rerun_calls)
