"""The failure matrix: every step that calls a model, under every fault, ends with one clear error and a non-zero exit,
its MLflow run not FINISHED, and nothing new under `compiled/`.

Faults here need no model: no endpoint configured, a stand-in server that answers slowly. The faults on the real
embedded server (a server killed mid-step, unparseable replies) are in tests/test_faults.py and
tests/test_faults_components.py.
"""

import signal
import subprocess
import sys
import time

import pytest
from fault_commands import flags, parent_runs
from openai_standin import StandInServer

from prefcraft.backends import free_port
from prefcraft.cli import main

STEPS = {
    "synthesizeme fit": ["synthesizeme", "fit", "--users", "sample_user_01"],
    "synthesizeme evaluate": ["synthesizeme", "evaluate", "--users", "sample_user_01"],
    "synthesizeme demo": ["synthesizeme", "demo"],
    "persona compile": ["synthesizeme", "compile-persona", "--train-users", "sample_user_01",
                        "--val-users", "sample_user_02",
                        "--output", "compiled/persona_synthesizer/persona.json"],
    "cupid evaluate": ["cupid", "evaluate", "--max-instances", "1"],
    "cupid compile": ["cupid", "compile", "--max-instances", "1"],
    "lampqa evaluate": ["lampqa", "evaluate", "--max-questions", "1"],
    "lampqa compile": ["lampqa", "compile", "--max-questions", "1"],
    "prefdisco evaluate": ["prefdisco", "evaluate", "--max-scenarios", "1"],
    "prefdisco compile": ["prefdisco", "compile", "--max-scenarios", "2"],
}

MID_STEP = ["synthesizeme evaluate", "persona compile", "cupid evaluate", "cupid compile", "lampqa evaluate",
            "prefdisco compile"]  # each component's evaluation, and compiles of both kinds, under faults mid-step


def tracking(tmp_path):
    return ["--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", "--cache-dir", str(tmp_path / "cache")]


def assert_one_error_line(error: str, *needles: str) -> None:
    lines = [line for line in error.splitlines() if line.startswith("prefcraft: error:")]
    assert len(lines) == 1, error
    assert all(needle in error for needle in needles), error
    assert "Traceback" not in error, error


def assert_nothing_finished(tmp_path) -> None:
    if (tmp_path / "mlflow.db").exists():
        assert "FINISHED" not in [run.info.status for run in parent_runs(tmp_path)]


# No endpoint


@pytest.mark.parametrize("step", STEPS)
def test_no_endpoint_with_no_serve_is_one_error_naming_the_flag_before_any_call(step, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*STEPS[step], "--no-serve", *tracking(tmp_path)]) == 2
    assert_one_error_line(capsys.readouterr().err, "the task model hosted_vllm/", "--task-api-base", "--no-serve")
    assert_nothing_finished(tmp_path)
    assert not (tmp_path / "runs").exists() and not (tmp_path / "compiled").exists()


def test_no_endpoint_names_the_role_whose_model_lacks_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = [*STEPS["cupid evaluate"], "--no-serve", "--task-api-base", "http://127.0.0.1:9/v1",
            "--judge-model", "hosted_vllm/judge", *tracking(tmp_path)]
    assert main(argv) == 2
    assert_one_error_line(capsys.readouterr().err, "the judge model hosted_vllm/judge", "--judge-api-base")


def test_a_hosted_model_without_its_key_is_one_error_naming_the_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    argv = [*STEPS["cupid evaluate"], "--no-serve", "--task-model", "openai/gpt-4o-mini", *tracking(tmp_path)]
    assert main(argv) == 2
    assert_one_error_line(capsys.readouterr().err, "openai/gpt-4o-mini", "OPENAI_API_KEY is not set")
    assert_nothing_finished(tmp_path)


# Unreachable, killed mid-step, slower than the timeout: stand-in servers


def output_flags(step, tmp_path):
    """Where each step writes: compiled programs into a compiled/ folder, results into runs/."""
    if step == "persona compile":
        return []
    output = ["--output", str(tmp_path / "compiled" / "program.json")] if "compile" in step else []
    component = step.split()[0] in ("cupid", "lampqa", "prefdisco")
    return [*output, "--output-dir", str(tmp_path / "runs")] if component else output


def run_step(step, tmp_path, api_base, *extra):
    argv = [*STEPS[step], *output_flags(step, tmp_path), *flags(tmp_path, api_base), *extra]
    return main(argv)


@pytest.mark.parametrize("step", STEPS)
def test_an_unreachable_endpoint_is_one_error_naming_it(step, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    api_base = f"http://127.0.0.1:{free_port()}/v1"
    assert run_step(step, tmp_path, api_base) == 2
    assert_one_error_line(capsys.readouterr().err, f"model server at {api_base} is unreachable")
    assert_nothing_finished(tmp_path)
    assert not (tmp_path / "compiled").exists()


@pytest.mark.parametrize("step", MID_STEP)
def test_a_server_killed_mid_step_is_one_error_naming_it(step, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    server = StandInServer(die_after=2)
    try:
        assert run_step(step, tmp_path, server.api_base) == 2
    finally:
        server.close()
    assert_one_error_line(capsys.readouterr().err, f"model server at {server.api_base} is unreachable")
    assert [run.info.status for run in parent_runs(tmp_path)] == ["FAILED"]
    assert not (tmp_path / "compiled").exists()


@pytest.mark.parametrize("step", MID_STEP)
def test_a_server_slower_than_the_timeout_is_one_error_saying_so_and_gets_no_work_twice(
    step, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    server = StandInServer(delay_s=2.0)
    try:
        assert run_step(step, tmp_path, server.api_base, "--task-timeout-s", "0.5") == 2
    finally:
        server.close()
    assert_one_error_line(capsys.readouterr().err, f"timed out at {server.api_base} (after 0.5 s)", "--task-timeout-s")
    assert len(server.bodies) <= 2  # what was in flight when the first timed out, one per thread; nothing sent again
    assert [run.info.status for run in parent_runs(tmp_path)] == ["FAILED"]
    assert not (tmp_path / "compiled").exists()


# SIGINT and SIGTERM, in a real process started as a shell starts one in the background: with SIGINT ignored


STOPPED = {signal.SIGINT: (130, "prefcraft: interrupted"), signal.SIGTERM: (143, "SIGTERM: stopping")}
REQUESTS_BEFORE_THE_SIGNAL = {"cupid compile": 7, "cupid evaluate": 2}  # the compile: MIPROv2 proposing instructions


@pytest.fixture
def slow_standin():
    server = StandInServer(delay_s=1.0)
    yield server
    server.close()


@pytest.mark.parametrize("signum", STOPPED, ids=lambda signum: signal.Signals(signum).name)
@pytest.mark.parametrize("step", REQUESTS_BEFORE_THE_SIGNAL)
def test_a_signal_stops_the_step_at_once_and_its_run_is_killed(step, signum, slow_standin, tmp_path):
    compiled = tmp_path / "compiled"
    argv = [*STEPS[step], *(["--output", str(compiled / "inferrer.json")] if "compile" in step else []),
            *flags(tmp_path, slow_standin.api_base)]
    process = subprocess.Popen([sys.executable, "-m", "prefcraft.cli", *argv], cwd=tmp_path, stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 120
        while len(slow_standin.bodies) < REQUESTS_BEFORE_THE_SIGNAL[step] and process.poll() is None:
            assert time.monotonic() < deadline, "the step never reached the point of the signal"
            time.sleep(0.05)
        process.send_signal(signum)
        sent = len(slow_standin.bodies)
        _, error = process.communicate(timeout=30)
    finally:
        process.kill()
    code, message = STOPPED[signum]
    assert process.returncode == code, error
    assert message in error and "Traceback" not in error, error
    assert len(slow_standin.bodies) <= sent + 2, "requests went on after the signal"  # at most one per thread
    assert [run.info.status for run in parent_runs(tmp_path)] == ["KILLED"]
    assert not compiled.exists()
