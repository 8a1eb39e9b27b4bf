"""The command line end to end on the real embedded server: fit (resumable, bad users skipped), evaluate, tracking."""

import json

import mlflow
import pytest

from prefcraft.backends import free_port
from prefcraft.commands.main import main
from prefcraft.components.synthesizeme.commands import COMPONENT as SYNTHESIZEME
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.flags import parse_step
from prefcraft.settings import Settings


def write_rows(path, users):
    rows = [pair.model_dump() for user in users for pair in user.train + user.val + user.test]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def common_flags(tmp_path, api_base):
    return ["--no-serve", "--task-api-base", api_base, "--task-max-tokens", "256", "--task-timeout-s", "300",
            "--threads", "2", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db",
            "--cache-dir", str(tmp_path / "cache")]


def test_unreachable_server_is_one_clear_error(tmp_path, capsys):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    code = main(["synthesizeme", "evaluate", *common_flags(tmp_path, dead)])
    assert code == 2
    error = capsys.readouterr().err
    assert f"model server at {dead} is unreachable" in error
    assert "Traceback" not in error


def test_a_malformed_data_file_names_file_row_and_field(tmp_path, capsys):
    data = tmp_path / "bad.jsonl"
    row = {"user_id": "u", "split": "train", "context": [], "chosen": {"role": "m", "content": "a"},
           "rejected": {"role": "m", "content": "b"}}
    data.write_text(json.dumps(row) + "\n")
    code = main(["synthesizeme", "evaluate", "--data", str(data), *common_flags(tmp_path, "http://127.0.0.1:1/v1")])
    assert code == 2
    assert f"{data}, row 0, field 'context'" in capsys.readouterr().err


def test_compile_persona_refuses_overlapping_users_before_any_model_call(tmp_path, capsys):
    flags = ["--train-users", "sample_user_01", "--val-users", "sample_user_01", "--output", str(tmp_path / "p.json")]
    assert main(["synthesizeme", "compile-persona", *flags, *common_flags(tmp_path, "http://127.0.0.1:1/v1")]) == 2
    assert "training and validation users overlap" in capsys.readouterr().err


def test_compile_persona_needs_target_pairs_for_the_papers_metric_before_any_model_call(tmp_path, capsys):
    rows = [json.loads(line) for line in SAMPLE_USERS.read_text().splitlines()]
    data = tmp_path / "users.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows
                            if not (row["user_id"] == "sample_user_02" and row["split"] == "test")))
    flags = ["--data", str(data), "--train-users", "sample_user_01", "--val-users", "sample_user_02", "--output",
             str(tmp_path / "p.json"), *common_flags(tmp_path, "http://127.0.0.1:1/v1")]
    assert main(["synthesizeme", "compile-persona", *flags]) == 2
    error = capsys.readouterr().err
    assert "user(s) sample_user_02 have no target (test) pairs" in error and "--persona-metric accuracy" in error


def test_search_flag_chooses_how_candidates_are_scored():
    settings = Settings(threads=2)
    assert parse_step(SYNTHESIZEME, "fit", []).search_config(settings).search == "exact"  # the paper's winner
    for search in ("exhaustive", "halving"):
        assert parse_step(SYNTHESIZEME, "fit", ["--search", search]).search_config(settings).search == search


@pytest.mark.server
def test_fit_then_evaluate_every_method(embedded_server, tmp_path, user_with, capsys, monkeypatch):
    # An API key read from the environment must reach no output: MLflow (params, traces, artifacts), compiled JSON,
    # result files, logs, cache. MLflow's artifacts go under the working directory, here tmp_path.
    secret = "sk-prefcraft-test-4f9a0c1e7b"
    monkeypatch.setenv("PREFCRAFT_TASK__API_KEY_ENV", "TEST_PROVIDER_API_KEY")
    monkeypatch.setenv("TEST_PROVIDER_API_KEY", secret)
    monkeypatch.chdir(tmp_path)
    good = [user_with(3, 2, short_wins=True, user_id="short_fan"),
            user_with(3, 2, short_wins=False, user_id="long_fan")]
    tiny = user_with(1, 0, user_id="too_few")
    data = write_rows(tmp_path / "pairs.jsonl", [*good, tiny])
    flags = [*common_flags(tmp_path, embedded_server.base_url), "--data", str(data)]
    fitted = tmp_path / "fitted"

    assert main(["synthesizeme", "fit", *flags, "--fitted-dir", str(fitted), "--subsets", "2",
                 "--demo-candidates", "2"]) == 0
    out = capsys.readouterr().out
    assert "fitted 2 user(s), resumed 0, skipped 1" in out and "too_few" in out
    assert sorted(path.name for path in fitted.iterdir()) == ["long_fan.json", "short_fan.json"]

    assert main(["synthesizeme", "fit", *flags, "--fitted-dir", str(fitted), "--subsets", "2",
                 "--demo-candidates", "2"]) == 0
    assert "fitted 0 user(s), resumed 2, skipped 1" in capsys.readouterr().out

    methods = ["baseline", "memory", "demos", "persona", "synthesizeme"]
    assert main(["synthesizeme", "evaluate", *flags, "--fitted-dir", str(fitted), "--methods", *methods,
                 "--output-dir", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    for method in methods:
        assert f"{method}: accuracy over both orders" in out
        assert len((tmp_path / "results" / f"judgments-{method}.jsonl").read_text().splitlines()) == 8

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list")
    by_name = {run.info.run_name: run for run in runs}
    assert {"fit-synthesizeme", "evaluate", "short_fan", "long_fan"} <= set(by_name)
    statuses = {(run.info.run_name, run.info.status) for run in runs}
    assert ("too_few", "FAILED") in statuses  # the skipped user's child run, in both fit commands
    assert all(status == "FINISHED" for name, status in statuses if name != "too_few")
    assert by_name["fit-synthesizeme"].data.params["search"] == "exact"
    evaluate_run = by_name["evaluate"]
    assert 0.0 <= evaluate_run.data.metrics["synthesizeme_accuracy"] <= 1.0
    assert evaluate_run.data.metrics["baseline_lm_calls"] >= 0
    # The server's own prompt-cache counters, per fitted user and per evaluated method.
    assert by_name["short_fan"].data.metrics["prompt_tokens_evaluated"] > 0
    assert 0.0 < by_name["short_fan"].data.metrics["prompt_cache_share"] < 1.0
    assert evaluate_run.data.metrics["baseline_prompt_tokens_cached"] > 0
    assert "api_key" not in json.dumps(evaluate_run.data.params)
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.suffix == ".db" for path in written) and any("fitted" in path.parts for path in written)
    assert not [path for path in written if secret.encode() in path.read_bytes()]
