"""`prefcraft tour`: the closing table, the parts' comparisons, and a real run of two parts on the embedded model."""

import math

import mlflow
import pytest

from prefcraft.commands.main import main, make_parser
from prefcraft.commands.tour_table import TourRow, format_tour
from prefcraft.components.component import Comparison
from prefcraft.engine.usage import LMUsage
from prefcraft.metrics.pairwise import Judgment, pairwise_report
from prefcraft.registry import COMPONENTS


def test_the_parser_runs_all_five_by_default_with_the_demos_timeout():
    args = make_parser().parse_args(["tour"])
    assert args.components == list(COMPONENTS) == ["synthesizeme", "sensejudge", "prefdisco", "cupid", "lampqa"]
    assert args.sensebench is None and args.task_timeout_s == 600.0


def test_the_table_shows_scores_on_their_scales_and_says_what_was_skipped_or_failed():
    rows = [
        TourRow("SynthesizeMe", Comparison("accuracy, both orders", "default judge", 0.5, "SynthesizeMe", 0.625, "%"),
                LMUsage(120, 9000, 300), 290.4),
        TourRow("PrefDisco", Comparison("PrefAlign (1-5)", "baseline", 1.333, "discovery", math.nan, "points"),
                LMUsage(40, 100, 10), 61.0),
        TourRow("SenseJudge", skipped="needs SenseBench dialogues"),
        TourRow("CUPID", failed="model server at http://127.0.0.1:1 is unreachable", seconds=3.0),
    ]
    table = format_tour(rows)
    assert "default judge 50.0%" in table and "SynthesizeMe 62.5%" in table and "4m50s" in table
    assert "baseline 1.33" in table and "discovery -" in table
    assert "SenseJudge    skipped: needs SenseBench dialogues" in table
    assert "CUPID         FAILED: model server at http://127.0.0.1:1 is unreachable" in table
    assert table.splitlines()[-1].split()[-2:] == ["160", "5m54s"]


def test_synthesizeme_compares_the_default_judge_with_the_personal_one():
    from prefcraft.components.synthesizeme.demo import DemoOutcome
    from prefcraft.components.synthesizeme.evaluation import MethodOutcome
    from prefcraft.components.synthesizeme.fit import FitSummary

    def outcome(right: list[bool]) -> MethodOutcome:
        judgments = [Judgment("u", f"p{i}", "chosen_first", "First", ok) for i, ok in enumerate(right)]
        return MethodOutcome(pairwise_report(judgments), LMUsage(), judgments)

    compare = COMPONENTS["synthesizeme"].demo.compare
    demo = DemoOutcome(FitSummary(), {"baseline": outcome([True, False]), "synthesizeme": outcome([True, True])})
    comparison = compare(demo)
    assert (comparison.baseline_score, comparison.personalized_score) == (0.5, 1.0)


@pytest.mark.server
def test_a_tour_of_two_components_on_the_embedded_model(embedded_server, tmp_path, monkeypatch, capsys):
    """CUPID and LaMP-QA run their own demos; SenseJudge without dialogues is skipped, not failed. One parent run."""
    monkeypatch.chdir(tmp_path)
    flags = ["--no-serve", "--task-api-base", embedded_server.base_url, "--threads", "2",
             "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", "--cache-dir", str(tmp_path / "cache")]
    assert main(["tour", "--components", "sensejudge", "cupid", "lampqa", *flags]) == 0
    table = capsys.readouterr().out.split("=== the tour, in one table")[1]
    lines = {line.split()[0]: line for line in table.splitlines()[2:] if line.strip()}
    assert list(lines) == ["component", "SenseJudge", "CUPID", "LaMP-QA", "all"]
    assert "skipped: needs SenseBench dialogues" in lines["SenseJudge"]
    assert "baseline (no preference)" in lines["CUPID"] and "inferred preference" in lines["CUPID"]
    assert "PlanPers" in lines["LaMP-QA"]
    assert int(lines["CUPID"].split()[-2]) > 0 and int(lines["LaMP-QA"].split()[-2]) > 0
    assert (tmp_path / "runs" / "cupid" / "responses.jsonl").is_file()

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list")
    (tour,) = [run for run in runs if run.info.run_name == "tour"]
    nested = {run.info.run_name for run in runs if run.data.tags.get("mlflow.parentRunId") == tour.info.run_id}
    assert nested == {"cupid-evaluate", "lampqa-evaluate"}
    assert tour.data.metrics["cupid_lm_calls"] > 0 and "lampqa_personalized" in tour.data.metrics
