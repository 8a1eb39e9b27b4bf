"""`evaluate --executor ray` and `experiment run --executor ray`: each user and method judged as a Ray task on a local
two-worker cluster against a stand-in server, with the same requests, judgments, files, reports and MLflow child runs
as the local executor; a rerun asks nothing; an experiment gives the executor to the steps that take it."""

import json
import logging
from contextlib import nullcontext

import dspy
import mlflow
import pytest
from openai_standin import StandInServer
from toml_files import write

from prefcraft import api, runner
from prefcraft.commands.main import main, make_parser, run_command
from prefcraft.components.synthesizeme import evaluation as evaluate
from prefcraft.components.synthesizeme import fit
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.errors import ConfigError
from prefcraft.executors import map_in_workers
from prefcraft.experiments.files import load_experiment
from prefcraft.experiments.running import run_experiment
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.settings import Settings
from prefcraft.tracking.runs import data_digest
from tests.fakes import FakeTracker
from tests.worker_runs import USERS, requests, settings_for, write_data

ray = pytest.importorskip("ray", reason="the distributed extra is not installed")
METHODS = ["baseline", "memory", "persona", "synthesizeme"]


@pytest.fixture
def server():
    standin = StandInServer()
    yield standin
    standin.close()


def fitted_judges(directory, data):
    """A judge per user as `fit` saves it: the persona with one demo, so that synthesizeme asks other than persona."""
    judges = {}
    for user_id in USERS:
        judge = PreferenceJudge("Likes short answers.")
        judge.demos = [dspy.Example(conversation="[user]: Hi?", first_completion="Hi.",
                                    second_completion="Hello there.", reasoning="Shorter.", preference="First")]
        judges[user_id] = save_compiled(judge, directory / f"{user_id}.json", program_name=PERSONAL_JUDGE,
                                        user_id=user_id, persona="Likes short answers.", data_digest=data_digest(data))
    return judges


def test_ray_judges_writes_and_logs_as_the_local_executor_and_a_rerun_asks_nothing(two_ray_workers, server,
                                                                                    tmp_path, user_with):
    data = write_data(tmp_path / "pairs.jsonl", user_with)
    fitted_judges(tmp_path / "fitted", data)

    def run(name, executor):
        return api.evaluate(settings_for(server, tmp_path, name), data=data, methods=METHODS,
                            fitted_dir=tmp_path / "fitted", output_dir=tmp_path / name, executor=executor)

    here = run("local", "local")
    asked_here = requests(server)
    server.bodies.clear()
    on_ray = run("ray", "ray")

    assert requests(server) == asked_here  # the same requests, each once
    assert list(on_ray) == METHODS
    for method in METHODS:
        assert on_ray[method].judgments == here[method].judgments
        assert on_ray[method].report.as_metrics() == here[method].report.as_metrics()
        assert on_ray[method].report.per_user == here[method].report.per_user
        assert on_ray[method].usage == here[method].usage
        name = f"judgments-{method}.jsonl"
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert {judgment.user_id for judgment in on_ray["memory"].judgments} == set(USERS)
    assert on_ray["memory"].usage.calls > on_ray["baseline"].usage.calls  # the memory was built in the workers

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow-ray.db")
    runs = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list")
    [parent] = [run for run in runs if run.info.run_name == "evaluate"]
    children = {run.info.run_name: run for run in runs if run.data.tags.get("mlflow.parentRunId") == parent.info.run_id}
    assert set(children) == set(USERS)
    for user_id, child in children.items():
        assert child.data.metrics == {f"{method}_accuracy": here[method].report.per_user[user_id].mean
                                      for method in METHODS}
    assert parent.data.metrics["synthesizeme_accuracy"] == here["synthesizeme"].report.accuracy.mean
    assert parent.data.metrics["memory_lm_calls"] == here["memory"].usage.calls

    server.bodies.clear()
    again = run("ray", "ray")  # the workers answer every call from the driver's DSPy cache directory

    assert server.bodies == []
    assert all(again[method].judgments == here[method].judgments for method in METHODS)


def test_the_evaluate_command_passes_the_executor_and_the_address_on(monkeypatch, tmp_path):
    passed = {}

    def record(run, options, selection):
        passed.update(executor=options.executor, address=options.address)
        return {}

    monkeypatch.setattr(evaluate, "evaluate_methods", record)
    monkeypatch.setattr(runner, "model_session", nullcontext)  # no server: the evaluation itself is recorded
    monkeypatch.setattr(runner, "start_tracking", lambda session: FakeTracker())
    argv = ["synthesizeme", "evaluate", "--executor", "ray", "--address", "ray://head:10001",
            "--fitted-dir", str(tmp_path)]
    run_command(make_parser().parse_args(argv), Settings())
    assert passed["executor"] == "ray" and passed["address"] == "ray://head:10001"
    run_command(make_parser().parse_args(["synthesizeme", "evaluate", "--fitted-dir", str(tmp_path)]), Settings())
    assert passed["executor"] == "local" and passed["address"] is None


def test_the_api_passes_the_executor_and_the_address_on(monkeypatch, tmp_path):
    passed = {}
    monkeypatch.setattr(api, "run_step",
                        lambda component, step, options, settings, emit: passed.setdefault(step, options))

    api.fit(Settings(), fitted_dir=tmp_path, persona_prompt=tmp_path / "p.json", executor="ray", address="auto")
    api.evaluate(Settings(), fitted_dir=tmp_path, executor="ray", address="auto")

    assert list(passed) == ["fit", "evaluate"]
    assert [(options.executor, options.address) for options in passed.values()] == [("ray", "auto")] * 2


# experiments

SYNTHESIZEME = """
name = "scale-out"
component = "synthesizeme"
[steps.compile-persona]
train_users = ["u1"]
val_users = ["u2"]
output = "persona.json"
[steps.fit]
executor = "local"
address = "ray://from-the-file:10001"
[steps.evaluate]
"""


def test_an_experiment_gives_the_executor_to_fit_and_evaluate_and_says_once_what_runs_here(tmp_path, monkeypatch,
                                                                                          caplog):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, SYNTHESIZEME)
    called = {}
    monkeypatch.setattr("prefcraft.experiments.running.run_step",
                        lambda component, step, options, settings: called.setdefault(step, options))
    settings = Settings(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")

    with caplog.at_level(logging.INFO, logger="prefcraft.experiments.files"):
        run_experiment(path, load_experiment(path), settings, lambda line: None, executor="ray")

    assert (called["fit"].executor, called["fit"].address) == ("ray", "ray://from-the-file:10001")  # flag over file
    assert (called["evaluate"].executor, called["evaluate"].address) == ("ray", None)
    assert not hasattr(called["compile-persona"], "executor")
    said = [record.getMessage() for record in caplog.records if record.name == "prefcraft.experiments.files"]
    assert said == ["--executor ray: compile-persona run here (no --executor)"]
    mlflow.set_tracking_uri(settings.tracking_uri)
    (run,) = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list")
    logged = json.loads(mlflow.artifacts.load_text(f"{run.info.artifact_uri}/steps.json"))
    assert logged["fit"]["executor"] == logged["evaluate"]["executor"] == "ray"

    called.clear()
    run_experiment(path, load_experiment(path), settings, lambda line: None)  # without the flag: as the file says
    assert (called["fit"].executor, called["evaluate"].executor) == ("local", "local")


def test_an_experiment_none_of_whose_steps_takes_an_executor_refuses_one_before_it_runs(tmp_path, monkeypatch):
    path = write(tmp_path, 'name = "t"\ncomponent = "cupid"\n[steps.evaluate]\nmax_instances = 1\n')
    monkeypatch.setattr("prefcraft.experiments.running.run_step", lambda *args: pytest.fail("a step ran"))
    with pytest.raises(ConfigError, match="--executor ray: no step of this experiment \\(evaluate\\) takes it"):
        run_experiment(path, load_experiment(path), Settings(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db"),
                       lambda line: None, executor="ray")


def test_experiment_run_with_executor_ray_fits_and_evaluates_on_ray(two_ray_workers, server, tmp_path, user_with,
                                                                   monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_data(tmp_path / "pairs.jsonl", user_with)
    path = write(tmp_path, """
name = "small-on-ray"
component = "synthesizeme"
[steps.fit]
data = "pairs.jsonl"
users = ["u1", "u2"]
fitted_dir = "fitted"
subsets = 2
demo_candidates = 2
max_demos = 2
[steps.evaluate]
data = "pairs.jsonl"
users = ["u1", "u2"]
methods = ["baseline", "synthesizeme"]
fitted_dir = "fitted"
output_dir = "out"
""")
    mapped = []

    def spy(function, items, where):
        items = list(items)
        mapped.append((function.__name__, len(items), where.executor, where.address))
        return map_in_workers(function, items, where)

    monkeypatch.setattr(fit, "map_in_workers", spy)
    monkeypatch.setattr(evaluate, "map_in_workers", spy)
    argv = ["experiment", "run", str(path), "--executor", "ray", "--no-serve", "--task-api-base", server.api_base,
            "--cache-dir", str(tmp_path / "cache"), "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]

    assert main(argv) == 0

    assert mapped == [("compile_judge_in_worker", 2, "ray", None), ("judge_user_in_worker", 4, "ray", None)]
    assert {path.name for path in (tmp_path / "fitted").iterdir()} == {"u1.json", "u2.json"}
    assert (tmp_path / "out" / "judgments-synthesizeme.jsonl").is_file()
