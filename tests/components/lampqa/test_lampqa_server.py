"""`prefcraft lampqa evaluate` end to end on the real embedded server: one question, the baseline and PlanPers."""

import json

import mlflow
import pytest

from prefcraft.commands.main import main


@pytest.mark.server
def test_lampqa_evaluate_on_the_embedded_model_then_a_rerun_from_the_cache(embedded_server, tmp_path, capsys):
    flags = ["--no-serve", "--task-api-base", embedded_server.base_url, "--task-timeout-s", "300", "--threads", "2",
             "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", "--cache-dir", str(tmp_path / "cache"),
             "--output-dir", str(tmp_path / "out"), "--categories", "Lifestyle_and_Personal_Development",
             "--max-questions", "1", "--k", "3", "--methods", "baseline", "planpers", "--no-shipped"]
    assert main(["lampqa", "evaluate", *flags]) == 0
    out = capsys.readouterr().out
    assert "PlanPers" in out and "Planner coverage" in out and "Cost per question" in out
    summary = json.loads((tmp_path / "out" / "lampqa-summary.json").read_text())
    assert summary["questions"] == 1 and set(summary["methods"]) == {"baseline", "planpers"}
    planpers = summary["methods"]["planpers"]
    assert planpers["cost"]["answer"]["usage"]["calls"] == 2  # planner + answerer, schema-constrained: no retries
    assert 0.0 <= planpers["score"]["mean"] <= 1.0 and planpers["failed_answers"] == 0
    row = json.loads((tmp_path / "out" / "lampqa-planpers.jsonl").read_text())
    assert row["plan"] and row["answer"] and len(row["retrieved"]) == 3 and len(row["scores"]) >= 3

    assert main(["lampqa", "evaluate", *flags]) == 0  # a re-run: every answer from DSPy's cache
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list", order_by=["start_time ASC"])
    parents = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    children = [run for run in runs if run.info.run_name in ("lampqa-baseline", "lampqa-planpers")]
    assert [run.info.run_name for run in parents] == ["lampqa-evaluate"] * 2
    assert len(children) == 4 and all(run.info.status == "FINISHED" for run in runs)
    first, rerun = children[:2], children[2:]
    assert all(run.data.metrics["judge_lm_calls"] > 0 for run in first)
    calls = {name: value for run in rerun for name, value in run.data.metrics.items() if name.endswith("lm_calls")}
    assert calls and not any(calls.values()), calls
