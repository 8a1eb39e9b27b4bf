"""Every compile's MLflow run logs what it cost: the calls its optimizer and validations sent, counted after they ran.

Each compile runs for real (MIPROv2, 2 candidates, 1 trial) against a stand-in server that answers every request, on
an empty cache, so the run's `lm_calls` must equal the requests the server received.
"""

import pytest
from fault_commands import flags, parent_runs
from openai_standin import StandInServer

from prefcraft.commands.main import main

OPTIMIZER = ["--candidates", "2", "--trials", "1", "--max-bootstrapped-demos", "1", "--max-labeled-demos", "0"]
COMPILES = {
    "cupid-compile": ["cupid", "compile", "--max-instances", "1"],
    "lampqa-compile": ["lampqa", "compile", "--max-questions", "1", "--k", "2"],
    "prefdisco-compile": ["prefdisco", "compile", "--max-scenarios", "2", "--max-turns", "1"],
    "compile-persona": ["synthesizeme", "compile-persona", "--train-users", "sample_user_01",
                        "--val-users", "sample_user_02",
                        "--subsets", "1", "--demo-candidates", "1"],
}


@pytest.fixture
def standin():
    server = StandInServer()
    yield server
    server.close()


@pytest.mark.parametrize("run_name", COMPILES)
def test_a_compile_run_logs_the_calls_it_sent(run_name, standin, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    command = [*COMPILES[run_name], *OPTIMIZER, "--output", str(tmp_path / "compiled.json")]
    assert main([*command, *flags(tmp_path, standin.api_base)]) == 0
    [run] = parent_runs(tmp_path)
    assert (run.info.run_name, run.info.status) == (run_name, "FINISHED")
    assert run.data.metrics["lm_calls"] == run.data.metrics["lm_requests"] == len(standin.bodies) > 0
    assert run.data.metrics["lm_retries"] == 0
    assert run.data.metrics["prompt_tokens"] == 3 * len(standin.bodies)  # the stand-in's usage per reply
