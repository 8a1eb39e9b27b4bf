"""`prefcraft experiment run`: one real experiment on the embedded model, run twice; the second is answered by DSPy's
cache. One MLflow parent run per run, the step's runs nested under it."""

import json

import mlflow
import pytest

from prefcraft.commands.main import main
from prefcraft.engine.usage import metered

# CUPID's evaluate on one bundled instance, the gold-preference response only: the cheapest real experiment.
EXPERIMENT = """
name = "cupid-tiny"
description = "one bundled instance, inference and the gold-preference response"
component = "cupid"

[settings]
threads = 2

[settings.task]
max_tokens = 128
timeout_s = 300.0

[steps.evaluate]
max_instances = 1
no_shipped = true
responses = ["gold"]
output_dir = "out"
"""


@pytest.mark.server
def test_an_experiment_runs_under_one_parent_run_and_reruns_from_the_cache(embedded_server, tmp_path, monkeypatch,
                                                                          capsys):
    monkeypatch.chdir(tmp_path)  # output_dir = "out" is relative: it lands in the current directory
    (tmp_path / "cupid-tiny.toml").write_text(EXPERIMENT, encoding="utf-8")
    argv = ["experiment", "run", "cupid-tiny.toml", "--no-serve", "--task-api-base", embedded_server.base_url,
            "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", "--cache-dir", str(tmp_path / "cache")]

    with metered() as first:
        assert main(argv) == 0
    out = capsys.readouterr().out
    assert "=== cupid-tiny, step 1/1: prefcraft cupid evaluate (max_instances=1" in out and "F1 (micro)" in out
    rows = [json.loads(line) for line in (tmp_path / "out" / "inference-all.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["failed"] is None, rows
    assert (tmp_path / "out" / "responses.jsonl").is_file()
    assert first.usage.calls > 0

    with metered() as second:
        assert main(argv) == 0
    assert second.usage.calls == 0
    assert "step 1/1 done: 0 LM calls" in capsys.readouterr().out

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list", order_by=["start_time ASC"])
    parents = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    assert [run.info.run_name for run in parents] == ["experiment:cupid-tiny"] * 2
    assert [run.data.metrics["lm_calls"] for run in parents] == [first.usage.calls, 0]
    for parent in parents:
        assert parent.data.params["component"] == "cupid" and parent.data.params["steps"] == '["evaluate"]'
        assert parent.data.params["task_api_base"] == embedded_server.base_url  # the flag over the file
        steps = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        assert [run.info.run_name for run in steps] == ["cupid-evaluate"]
        artifacts = {artifact.path for artifact in mlflow.MlflowClient().list_artifacts(parent.info.run_id)}
        assert {"cupid-tiny.toml", "steps.json"} <= artifacts
    rerun_steps = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parents[1].info.run_id]
    nested = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == rerun_steps[0].info.run_id]
    assert {"infer-all", "respond-gold"} <= {run.info.run_name for run in nested}
    calls = {name: value for run in nested for name, value in run.data.metrics.items() if name.endswith("lm_calls")}
    assert calls and not any(calls.values()), calls
