import hashlib
import logging
from pathlib import Path

import dspy
import mlflow
import pytest
from dspy.utils import DummyLM
from mlflow.tracking import MlflowClient

from prefcraft.commands.main import make_parser
from prefcraft.flags import settings_overrides
from prefcraft.settings import ModelSettings, Settings, load_settings
from prefcraft.tracking import runs as tracking
from prefcraft.tracking.runs import data_digest, model_params, start_tracking, tracked_run

PARAMS = {"data_digest": "1a2b", "search": "halving", "users": 3, "methods": ["baseline", "persona"],
          "persona_prompt": "p" * 600}  # longer than MLflow is given: compared as it is stored, truncated


@pytest.fixture
def track(tmp_path):
    """start_tracking on a store under tmp_path, its tracker; `track(resume=True)` is `--resume`."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return lambda resume=False: start_tracking(Settings(tracking_uri=uri, experiment="resume", resume=resume))


def interrupted(name, params=PARAMS, how="raised"):
    """A top-level run that `how` ended: it raised (FAILED) or its process was killed hard (left RUNNING)."""
    if how == "killed":
        client = MlflowClient()
        run = client.create_run(mlflow.get_experiment_by_name("resume").experiment_id, run_name=name)
        for key, value in params.items():
            client.log_param(run.info.run_id, key, tracking._param_value(value))
        client.log_metric(run.info.run_id, "users_fitted", 2)
        return run.info.run_id
    with pytest.raises(RuntimeError), tracked_run(name, params) as run:
        mlflow.log_metric("users_fitted", 2)
        raise RuntimeError("server died")
    return run.info.run_id


def test_a_run_started_inside_another_nests_under_it(tmp_path):
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("nesting")
    with tracked_run("tour") as parent, tracked_run("cupid-evaluate") as child:
        pass
    logged = mlflow.get_run(child.info.run_id)
    assert logged.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert "mlflow.parentRunId" not in mlflow.get_run(parent.info.run_id).data.tags


@pytest.mark.parametrize("how", ["raised", "killed"])
def test_resume_continues_the_interrupted_run_with_the_same_params(track, caplog, how):
    track()
    first = interrupted("fit", how=how)
    assert mlflow.get_run(first).info.status == ("FAILED" if how == "raised" else "RUNNING")
    resuming = track(resume=True)
    with caplog.at_level(logging.INFO, logger="prefcraft.tracking.runs"), resuming.run("fit", PARAMS) as run:
        mlflow.log_metric("users_resumed", 2)
    assert run.info.run_id == first
    assert f"resuming run {first} (fit)" in caplog.text
    resumed = mlflow.get_run(first)
    assert resumed.info.status == "FINISHED"
    assert resumed.data.metrics == {"users_fitted": 2, "users_resumed": 2}
    assert resumed.data.tags[tracking.RESUMED_TAG] == "1"
    assert len(mlflow.search_runs(output_format="list")) == 1


def test_resume_counts_every_resumption(track):
    track()
    first = interrupted("fit")
    resuming = track(resume=True)
    for _ in range(2):
        with pytest.raises(RuntimeError), resuming.run("fit", PARAMS):
            raise RuntimeError("server died again")
    assert mlflow.get_run(first).data.tags[tracking.RESUMED_TAG] == "2"
    assert mlflow.get_run(first).info.status == "FAILED"


def test_resume_with_changed_params_starts_a_new_run_and_names_every_change(track, caplog):
    track()
    first = interrupted("fit")
    resuming = track(resume=True)
    changed = {**PARAMS, "data_digest": "3c4d", "search": "exhaustive", "optimizer": "gepa"}
    with caplog.at_level(logging.WARNING), resuming.run("fit", changed) as run:
        pass
    assert run.info.run_id != first
    assert (f"not resuming run {first}: data_digest changed (1a2b -> 3c4d), search changed (halving -> exhaustive), "
            "optimizer changed (unset -> gepa); starting a new run") in caplog.text
    assert mlflow.get_run(first).info.status == "FAILED"
    assert tracking.RESUMED_TAG not in mlflow.get_run(run.info.run_id).data.tags


def test_resume_shortens_long_values_in_the_message(track, caplog):
    track()
    interrupted("fit")
    resuming = track(resume=True)
    with caplog.at_level(logging.WARNING), resuming.run("fit", {**PARAMS, "persona_prompt": "q" * 600}):
        pass
    assert f"persona_prompt changed ({'p' * 37}... -> {'q' * 37}...)" in caplog.text


def test_resume_with_nothing_interrupted_starts_a_new_run(track, caplog):
    resuming = track(resume=True)
    with caplog.at_level(logging.WARNING), resuming.run("evaluate", PARAMS) as run:
        pass
    assert "nothing to resume for evaluate; starting a new run" in caplog.text
    assert mlflow.get_run(run.info.run_id).info.status == "FINISHED"


def test_resume_never_reopens_a_finished_run(track, caplog):
    track()
    interrupted("fit")
    with tracked_run("fit", PARAMS) as finished:  # the failed run was run again to the end, without --resume
        pass
    resuming = track(resume=True)
    with caplog.at_level(logging.WARNING), resuming.run("fit", PARAMS) as run:
        pass
    assert run.info.run_id != finished.info.run_id
    assert f"nothing to resume for fit (run {finished.info.run_id} finished)" in caplog.text
    assert len(mlflow.search_runs(output_format="list")) == 3


def test_without_resume_a_new_run_is_always_opened(track):
    track()
    first = interrupted("fit")
    with tracked_run("fit", PARAMS) as run:
        pass
    assert run.info.run_id != first
    assert mlflow.get_run(first).info.status == "FAILED"


def test_resume_leaves_nested_runs_alone(track, caplog):
    track()
    with tracked_run("tour"):
        interrupted("evaluate", {"user_id": "u1"})  # a child run that failed
        interrupted("u1", {"user_id": "u1"}, how="killed")  # a top-level run called like the next child
    resuming = track(resume=True)
    with caplog.at_level(logging.INFO), resuming.run("evaluate", {"user_id": "u1"}) as parent:
        with resuming.run("u1", {"user_id": "u1"}, nested=True) as child, resuming.run("u2") as inner:
            pass
    assert "nothing to resume for evaluate" in caplog.text  # the failed child is no top-level run
    assert "u1" not in caplog.text and "u2" not in caplog.text
    assert mlflow.get_run(child.info.run_id).data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert mlflow.get_run(inner.info.run_id).data.tags["mlflow.parentRunId"] == child.info.run_id
    assert len(mlflow.search_runs(output_format="list")) == 6


def test_a_served_model_is_recorded_by_its_server_not_its_per_run_port():
    first, second = (Settings().with_api_base(f"http://127.0.0.1:{port}/v1") for port in (40001, 40002))
    assert model_params(first) == model_params(second) == model_params(Settings())  # before the server starts
    assert model_params(first)["judge_api_base"] == "served llamacpp:bundled:SmolLM2-135M-Instruct"
    other = Settings(server={"model": "/models/other.gguf"}).with_api_base("http://127.0.0.1:40001/v1")
    assert model_params(other)["task_api_base"] == "served llamacpp:/models/other.gguf:other"  # served as itself
    assert model_params(other)["task_model"] == "hosted_vllm/other"
    hosted = Settings(judge=ModelSettings(api_base="http://gpu:8000/v1")).with_api_base("http://127.0.0.1:40001/v1")
    assert model_params(hosted)["judge_api_base"] == "http://gpu:8000/v1"
    assert model_params(Settings(serve=False))["task_api_base"] == ""


@pytest.mark.parametrize("argv", [["synthesizeme", "fit"], ["synthesizeme", "evaluate"], ["cupid", "compile"], ["tour"],
                                  ["sweep", "run", "s.toml"]])
def test_every_command_takes_resume(argv):
    assert "resume" not in settings_overrides(make_parser().parse_args(argv))  # the config file or environment rules
    overrides = settings_overrides(make_parser().parse_args([*argv, "--resume"]))
    assert load_settings(None, overrides, environ={}).resume is True
    assert load_settings(None, {}, environ={"PREFCRAFT_RESUME": "1"}).resume is True


def test_resume_ignores_params_that_change_no_result_and_says_which(track, caplog):
    track()
    first = interrupted("fit", {**PARAMS, "num_threads": 4, "fit_num_threads": 4})
    resuming = track(resume=True)
    changed = {**PARAMS, "num_threads": 1, "fit_num_threads": 2}
    with caplog.at_level(logging.INFO, logger="prefcraft.tracking.runs"), resuming.run("fit", changed) as run:
        pass
    assert run.info.run_id == first
    assert (f"resuming run {first} (fit); ignoring what changes no result: num_threads changed (4 -> 1), "
            "fit_num_threads changed (4 -> 2)") in caplog.text
    resumed = mlflow.get_run(first)
    assert resumed.data.params["num_threads"] == "4"  # as the run began
    assert resumed.data.tags[f"{tracking.IGNORED_TAG}.num_threads"] == "1"


def test_a_resumed_run_keeps_one_child_per_step(track):
    track()
    with pytest.raises(RuntimeError), tracked_run("fit", PARAMS) as first:
        for user in ("u1", "u2"):
            with tracked_run(user, {"user_id": user}, nested=True):
                pass
        with tracked_run("u3", {"user_id": "u3"}, nested=True):
            raise RuntimeError("server died")
    resuming = track(resume=True)
    with resuming.run("fit", PARAMS) as run:
        for user in ("u2", "u3"):  # u1's fitted file is kept: the command skips it without a child run
            with resuming.run(user, {"user_id": user}, nested=True):
                pass
    assert run.info.run_id == first.info.run_id
    children = mlflow.search_runs(filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'", output_format="list")
    assert sorted((child.info.run_name, child.info.status) for child in children) == [
        ("u1", "FINISHED"), ("u2", "FINISHED"), ("u3", "FINISHED")]


@pytest.fixture
def autolog_off():
    yield
    mlflow.dspy.autolog(disable=True, silent=True)  # start_tracking's patching is process-wide


@pytest.mark.parametrize("trace", [False, True])
def test_lm_calls_become_mlflow_traces_only_when_asked(tmp_path, autolog_off, trace):
    start_tracking(Settings(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}", experiment="traces", trace=trace))
    with dspy.context(lm=DummyLM([{"answer": "hi"}] * 2)):
        for question in ("one", "two"):
            dspy.Predict("question -> answer")(question=question)
    traces = mlflow.search_traces(locations=[mlflow.get_experiment_by_name("traces").experiment_id],
                                  return_type="list", flush=True)
    assert len(traces) == (2 if trace else 0)


def test_trace_is_a_flag_a_setting_and_a_variable():
    overrides = settings_overrides(make_parser().parse_args(["synthesizeme", "evaluate", "--trace"]))
    assert load_settings(None, overrides, environ={}).trace is True
    assert load_settings(None, {}, environ={"PREFCRAFT_TRACE": "1"}).trace is True
    assert load_settings(None, {}, environ={}).trace is False


def test_the_data_digest_is_the_files_sha256_read_once_until_the_file_changes(tmp_path, monkeypatch):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"a": 1}\n')
    assert data_digest(data) == hashlib.sha256(b'{"a": 1}\n').hexdigest()[:16]
    opened = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *args, **kwargs: opened.append(self) or real_open(self, *args,
                                                                                                         **kwargs))
    data_digest(data)
    assert opened == []
    data.write_text('{"a": 2, "b": 3}\n')
    opened.clear()
    assert data_digest(data) == hashlib.sha256(b'{"a": 2, "b": 3}\n').hexdigest()[:16] and opened == [data]
    assert data_digest("kixlab/CUPID") == "kixlab/CUPID"
