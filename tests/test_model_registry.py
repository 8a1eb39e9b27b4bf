"""Compiled programs as MLflow models: logged, promoted as the registered `champion`, read back by `models:/` URI
wherever prefcraft reads a compiled file, answering requests as a pyfunc model and, served by `mlflow models serve`,
over HTTP on the embedded model."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path

import dspy
import mlflow
import pytest
from dspy.utils.dummies import DummyLM

import prefcraft
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.errors import CompiledProgramError
from prefcraft.html_report import write_report
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.tracking.models import CHAMPION, input_example, log_program, registered_name

REQUEST = {"conversation": "[user]: How do I boil an egg?", "first_completion": "Boil it, then peel it and eat it.",
           "second_completion": "Boil it."}
ANSWER = {"reasoning": "It is shorter.", "preference": "Second"}


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MLflow's artifacts land under ./mlruns
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("registry")
    yield tmp_path
    mlflow.set_tracking_uri(None)


def logged_judge(folder, persona, promote_as):
    path = save_compiled(PreferenceJudge(persona), folder / f"{persona[:5]}.json", program_name=PERSONAL_JUDGE,
                         user_id="u1", persona=persona)
    with mlflow.start_run():
        return log_program(path, name=PERSONAL_JUDGE, request=REQUEST, metadata={"user_id": "u1"},
                           promote_as=promote_as)


def test_names_follow_the_program_its_user_and_the_task_model():
    qwen = "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"
    assert registered_name("cupid_inferrer", qwen) == "cupid_inferrer-Qwen2.5-7B-Instruct"
    assert registered_name(PERSONAL_JUDGE, "SmolLM2", "user 7/a") == "personal_judge-user_7_a-SmolLM2"


def test_a_request_is_an_example_s_inputs_when_they_are_text():
    assert input_example(dspy.Example(**REQUEST, preference="Second").with_inputs(*REQUEST)) == REQUEST
    assert input_example(dspy.Example(question="q", profile=[{"text": "t"}]).with_inputs("question", "profile")) is None


def test_a_promoted_program_is_the_champion_and_loads_back_by_its_alias(store):
    name = registered_name(PERSONAL_JUDGE, "SmolLM2-135M-Instruct", "u1")
    first = logged_judge(store, "Likes short answers.", promote_as=name)
    second = logged_judge(store, "Likes long answers.", promote_as=name)
    assert (first.version, second.version) == ("1", "2")
    assert second.alias_uri == f"models:/{name}@{CHAMPION}"
    loaded = prefcraft.load(second.alias_uri)
    assert isinstance(loaded.program, PreferenceJudge) and loaded.metadata["persona"] == "Likes long answers."
    assert prefcraft.load(f"models:/{name}/1").metadata["persona"] == "Likes short answers."
    assert prefcraft.load_judge(second.model_uri).persona == "Likes long answers."


def test_logging_a_program_prints_no_third_party_warning(store):
    """The tour logs every fitted judge: its output carries prefcraft's words only."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logged_judge(store, "Likes short answers.", promote_as=None)
    assert [str(warning.message) for warning in caught if "type hint" in str(warning.message)] == []


def test_a_program_that_lost_is_logged_but_never_registered(store):
    logged = logged_judge(store, "Likes short answers.", promote_as=None)
    assert logged.registered_name is None and logged.model_uri.startswith("models:/m-")
    assert mlflow.MlflowClient().search_registered_models() == []
    assert prefcraft.load(logged.model_uri).metadata["user_id"] == "u1"


def test_the_report_links_each_logged_program_to_its_model_and_version_in_the_mlflow_ui(store):
    name = registered_name(PERSONAL_JUDGE, "SmolLM2-135M-Instruct", "u1")
    promoted = logged_judge(store, "Likes short answers.", promote_as=name)
    lost = logged_judge(store, "Likes long answers.", promote_as=None)
    html = write_report(mlflow.get_tracking_uri(), "registry", store / "report.html", max_runs=5,
                        mlflow_ui="http://ui:5000/").read_text()
    experiment = mlflow.get_experiment_by_name("registry").experiment_id
    for logged in (promoted, lost):
        model_id = logged.model_uri.removeprefix("models:/")
        assert f'<a href="http://ui:5000/#/experiments/{experiment}/models/{model_id}">{model_id}</a>' in html
    assert f'<a href="http://ui:5000/#/models/{name}/versions/1">{name} v1</a>' in html
    assert html.count("not promoted: it lost the ship gate") == 1


def test_an_unknown_model_is_one_clear_error(store):
    with pytest.raises(CompiledProgramError, match="no model models:/nobody@champion in the MLflow store"):
        prefcraft.load("models:/nobody@champion")


def test_the_logged_model_answers_a_request_on_the_current_lm(store):
    logged = logged_judge(store, "Likes short answers.", promote_as=None)
    with dspy.context(lm=DummyLM({"[[ ## second_completion ## ]]": ANSWER})):
        model = mlflow.pyfunc.load_model(logged.model_uri)
        [answer] = model.predict(REQUEST)
    assert answer["preference"] == "Second" and answer["reasoning"] == "It is shorter."


@pytest.mark.server
def test_mlflow_serves_a_registered_judge_over_http_on_the_server_the_settings_name(store, embedded_server):
    name = registered_name(PERSONAL_JUDGE, "SmolLM2-135M-Instruct", "u1")
    logged_judge(store, "Likes short answers.", promote_as=name)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # `mlflow models serve` runs uvicorn from PATH: the environment's own, as with the environment activated.
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                   "MLFLOW_TRACKING_URI": mlflow.get_tracking_uri(),
                   "PREFCRAFT_TASK__API_BASE": embedded_server.base_url, "PREFCRAFT_TASK__MAX_TOKENS": "256"}
    command = [sys.executable, "-m", "mlflow", "models", "serve", "-m", f"models:/{name}@{CHAMPION}",
               "--env-manager", "local", "--host", "127.0.0.1", "-p", str(port)]
    server = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            assert server.poll() is None, server.stderr.read()
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{url}/ping", timeout=1)
                break
            time.sleep(0.5)
        request = urllib.request.Request(f"{url}/invocations", json.dumps({"dataframe_records": [REQUEST]}).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as response:
            [answer] = json.load(response)["predictions"]
    finally:
        server.terminate()
        server.wait(30)
    assert answer["preference"] in ("First", "Second") and answer["reasoning"]
