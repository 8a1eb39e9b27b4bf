"""The failure matrix: every registered step that calls a model, under every fault, ends with one clear error and a
non-zero exit, its MLflow run not FINISHED, and nothing new under `compiled/`.

Each row is the smallest run of its step, in a folder of its own (the working directory: every path below is
relative to it). Faults here need no model: no endpoint configured, a stand-in server that is unreachable, dies
mid-step, answers slower than the timeout, or is slow while the process gets SIGINT or SIGTERM. The faults on the
real embedded server, and runs after them, are in tests/test_faults.py and tests/test_faults_components.py; the
`--resume` those leave untested is here, on a stand-in.
"""

import contextlib
import json
import multiprocessing
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from fault_commands import flags, parent_runs, tracking_uri
from openai_standin import StandInServer
from sensebench_files import write_dialogues

from prefcraft.backends import free_port
from prefcraft.commands.main import main
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.optimizers import artifacts
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.registry import COMPONENTS

SENSEJUDGE_INPUTS = Path("sensejudge")
"""A labelled pairs file and the judge selected on it, made by `simulate` and `select` on a stand-in: what `select`
and `evaluate` read."""
PAIRS, JUDGE = SENSEJUDGE_INPUTS / "pairs.jsonl", SENSEJUDGE_INPUTS / "sensejudge.json"
SIMULATION = ["--sensebench", "new_sense_bmk.json", "--dev-dialogues", "1", "--test-dialogues", "1",
              "--response-models", "concise", "detailed"]

STEPS = {
    "synthesizeme fit": ["--users", "sample_user_01"],
    "synthesizeme evaluate": ["--users", "sample_user_01"],
    "synthesizeme compile-persona": ["--train-users", "sample_user_01", "--val-users", "sample_user_02",
                                     "--output", "compiled/persona.json"],
    "synthesizeme demo": ["--users", "sample_user_01"],
    "synthesizeme best-of-n": ["--judge-file", "judge.json", "--requests", "requests.jsonl", "--output",
                               "runs/best.jsonl"],
    "sensejudge simulate": [*SIMULATION, "--output", "runs/pairs.jsonl"],
    "sensejudge select": ["--data", str(PAIRS), "--judge-file", "compiled/sensejudge.json",
                          "--max-pair-descriptions", "1"],
    "sensejudge evaluate": ["--data", str(PAIRS), "--judge-file", str(JUDGE), "--output-dir", "runs"],
    "sensejudge demo": [*SIMULATION, "--data", "runs/pairs.jsonl", "--judge-file", "compiled/sensejudge.json",
                        "--max-pair-descriptions", "1", "--output-dir", "runs"],
    "prefdisco compile": ["--max-scenarios", "2", "--output", "compiled/program.json", "--output-dir", "runs"],
    "prefdisco evaluate": ["--max-scenarios", "1", "--output-dir", "runs"],
    "prefdisco demo": ["--max-per-task", "1", "--output-dir", "runs"],
    "cupid compile": ["--max-instances", "1", "--output", "compiled/program.json", "--output-dir", "runs"],
    "cupid evaluate": ["--max-instances", "1", "--output-dir", "runs"],
    "cupid demo": ["--max-instances", "1", "--output-dir", "runs"],
    "lampqa compile": ["--max-questions", "1", "--output", "compiled/program.json", "--output-dir", "runs"],
    "lampqa evaluate": ["--max-questions", "1", "--output-dir", "runs"],
    "lampqa demo": ["--max-questions", "1", "--output-dir", "runs"],
}
"""The smallest run of each registered step that calls a model: its flags after `prefcraft <component> <step>`."""

CALLS_NO_MODEL = {
    "prefdisco build-scenarios": "turns a question set into scenarios by seeded sampling, offline",
    "synthesizeme import-persona-prompt": "converts a released persona program's file into a compiled prompt",
}

MID_STEP = {
    "synthesizeme evaluate": 2, "synthesizeme compile-persona": 2,
    "sensejudge evaluate": 2, "sensejudge select": 2,
    "prefdisco evaluate": 2, "prefdisco compile": 2,
    "cupid evaluate": 2, "cupid compile": 7,  # MIPROv2 proposing instructions
    "lampqa evaluate": 2, "lampqa compile": 2,
}
"""Each component's evaluation-like and compile-like step, and the requests it sends before its faults mid-step."""


def test_every_registered_step_that_calls_a_model_has_a_row():
    registered = {f"{component.name} {step}" for component in COMPONENTS.values() for step in component.steps}
    assert registered - CALLS_NO_MODEL.keys() == STEPS.keys()
    assert {step.split()[0] for step in MID_STEP} == COMPONENTS.keys()


@pytest.fixture(scope="module")
def sensejudge_inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sensejudge")
    server = StandInServer(numbered=True)  # responses that differ make pairs
    try:
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.chdir(folder)
            write_dialogues(folder)
            settings = flags(folder, server.api_base)
            assert main(["sensejudge", "simulate", *SIMULATION, "--output", str(PAIRS), *settings]) == 0
            assert main(["sensejudge", "select", "--data", str(PAIRS), "--judge-file", str(JUDGE),
                         "--max-pair-descriptions", "1", *settings]) == 0
    finally:
        server.close()
    return folder / SENSEJUDGE_INPUTS


def shipped_programs() -> list[tuple[Path, int]]:
    return sorted((path, path.stat().st_mtime_ns) for path in artifacts.COMPILED_DIR.rglob("*"))


@pytest.fixture
def workdir(tmp_path, monkeypatch, sensejudge_inputs):
    """A fresh working directory with every row's inputs; fails the test if the shipped programs changed."""
    monkeypatch.chdir(tmp_path)
    write_dialogues(tmp_path, topics=("QA", "Math"))
    write_best_of_n_inputs(tmp_path)
    shutil.copytree(sensejudge_inputs, tmp_path / SENSEJUDGE_INPUTS)
    shipped = shipped_programs()
    yield tmp_path
    assert shipped_programs() == shipped


def write_best_of_n_inputs(folder: Path) -> None:
    """A fitted judge and one request of three candidates: what `synthesizeme best-of-n` reads."""
    save_compiled(PreferenceJudge("Likes short answers."), folder / "judge.json", program_name=PERSONAL_JUDGE,
                  user_id="u1", persona="Likes short answers.")
    request = {"conversation": "How do I boil an egg?", "candidates": ["Boil it.", "Boil it for nine minutes.", "Fry."]}
    (folder / "requests.jsonl").write_text(json.dumps(request) + "\n")


def argv(step: str, *settings: str) -> list[str]:
    return [*step.split(), *STEPS[step], *settings]


def tracking(tmp_path):
    return ["--tracking-uri", tracking_uri(tmp_path), "--cache-dir", str(tmp_path / "cache")]


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
def test_no_endpoint_with_no_serve_is_one_error_naming_the_flag_before_any_call(step, workdir, capsys):
    assert main(argv(step, "--no-serve", *tracking(workdir))) == 2
    assert_one_error_line(capsys.readouterr().err, "the task model hosted_vllm/", "--task-api-base", "--no-serve")
    assert_nothing_finished(workdir)
    assert not (workdir / "runs").exists() and not (workdir / "compiled").exists()


def test_no_endpoint_names_the_role_whose_model_lacks_one(workdir, capsys):
    settings = ["--no-serve", "--task-api-base", "http://127.0.0.1:9/v1", "--judge-model", "hosted_vllm/judge"]
    assert main(argv("cupid evaluate", *settings, *tracking(workdir))) == 2
    assert_one_error_line(capsys.readouterr().err, "the judge model hosted_vllm/judge", "--judge-api-base")


@pytest.mark.parametrize("serve", [["--no-serve"], []], ids=["no-serve", "default"])
def test_a_hosted_model_without_its_key_is_one_error_naming_the_variable(serve, workdir, monkeypatch, capsys):
    # a hosted API's model needs no server: without --no-serve none is started either, and its calls go to the API
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(argv("cupid evaluate", *serve, "--task-model", "openai/gpt-4o-mini", *tracking(workdir))) == 2
    assert_one_error_line(capsys.readouterr().err, "openai/gpt-4o-mini", "OPENAI_API_KEY is not set")
    assert_nothing_finished(workdir)


# Unreachable, killed mid-step, slower than the timeout: stand-in servers


@pytest.mark.parametrize("step", STEPS)
def test_an_unreachable_endpoint_is_one_error_naming_it(step, workdir, capsys):
    api_base = f"http://127.0.0.1:{free_port()}/v1"
    assert main(argv(step, *flags(workdir, api_base))) == 2
    assert_one_error_line(capsys.readouterr().err, f"model server at {api_base} is unreachable")
    assert_nothing_finished(workdir)
    assert not (workdir / "compiled").exists()


@pytest.mark.parametrize("step", MID_STEP)
def test_a_server_killed_mid_step_is_one_error_naming_it(step, workdir, capsys):
    server = StandInServer(die_after=MID_STEP[step])
    try:
        assert main(argv(step, *flags(workdir, server.api_base))) == 2
    finally:
        server.close()
    assert_one_error_line(capsys.readouterr().err, f"model server at {server.api_base} is unreachable")
    assert [run.info.status for run in parent_runs(workdir)] == ["FAILED"]
    assert not (workdir / "compiled").exists()


@pytest.mark.parametrize("step", MID_STEP)
def test_a_server_slower_than_the_timeout_is_one_error_saying_so_and_gets_no_work_twice(step, workdir, capsys):
    server = StandInServer(delay_s=2.0)
    try:
        assert main(argv(step, *flags(workdir, server.api_base), "--task-timeout-s", "0.5")) == 2
    finally:
        server.close()
    assert_one_error_line(capsys.readouterr().err, f"timed out at {server.api_base} (after 0.5 s)", "--task-timeout-s")
    assert len(server.bodies) <= 2  # what was in flight when the first timed out, one per thread; nothing sent again
    assert [run.info.status for run in parent_runs(workdir)] == ["FAILED"]
    assert not (workdir / "compiled").exists()


RESUMED = ["sensejudge select", "cupid evaluate", "lampqa evaluate", "prefdisco evaluate"]
"""The steps whose `--resume` no test on the embedded server runs (tests/test_faults.py resumes SynthesizeMe's;
tests/test_faults_components.py runs CUPID's, LaMP-QA's and PrefDisco's again without it)."""


@pytest.mark.parametrize("step", RESUMED)
def test_resumed_after_a_server_died_repeats_no_completed_call(step, workdir, capsys):
    """On the stand-in every answer completes at once: those sent before the death are in DSPy's cache."""
    server = StandInServer(die_after=3)
    try:
        assert main(argv(step, *flags(workdir, server.api_base))) == 2
        assert_one_error_line(capsys.readouterr().err, f"model server at {server.api_base} is unreachable")
        before = [repr(body) for body in server.bodies]
        server.die_after = None
        server.bodies.clear()
        assert main(argv(step, "--resume", *flags(workdir, server.api_base))) == 0
    finally:
        server.close()
    assert server.bodies and not set(before) & {repr(body) for body in server.bodies}, "a completed call was sent again"
    assert [(run.info.status, run.data.tags.get("prefcraft.resumed")) for run in parent_runs(workdir)] == [
        ("FINISHED", "1")]


# SIGINT and SIGTERM, each to a real process: the command forked from this one (its imports done, it starts in a
# second, where `python -m prefcraft.commands.main` takes half a minute on a busy machine), with SIGINT ignored as a
# shell starts a command in the background


STOPPED = {signal.SIGINT: (130, "prefcraft: interrupted"), signal.SIGTERM: (143, "SIGTERM: stopping")}


def run_in_background(arguments: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with open("stderr.txt", "w") as error, contextlib.redirect_stderr(error), open(os.devnull, "w") as out, \
            contextlib.redirect_stdout(out):
        sys.exit(main(arguments))


@pytest.mark.parametrize("signum", STOPPED, ids=lambda signum: signal.Signals(signum).name)
@pytest.mark.parametrize("step", MID_STEP)
def test_a_signal_stops_the_step_at_once_and_its_run_is_killed(step, signum, workdir):
    server = StandInServer(delay_s=1.0)
    process = multiprocessing.get_context("fork").Process(target=run_in_background,
                                                          args=(argv(step, *flags(workdir, server.api_base)),))
    try:
        process.start()
        deadline = time.monotonic() + 120
        while len(server.bodies) < MID_STEP[step] and process.is_alive():
            assert time.monotonic() < deadline, "the step never reached the point of the signal"
            time.sleep(0.05)
        os.kill(process.pid, signum)
        sent = len(server.bodies)
        process.join(timeout=30)
    finally:
        process.kill()
        server.close()
    error = (workdir / "stderr.txt").read_text()
    code, message = STOPPED[signum]
    assert process.exitcode == code, error
    assert message in error and "Traceback" not in error, error
    assert len(server.bodies) <= sent + 2, "requests went on after the signal"  # at most one per thread
    assert [run.info.status for run in parent_runs(workdir)] == ["KILLED"]
    assert not (workdir / "compiled").exists()
