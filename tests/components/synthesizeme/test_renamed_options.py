"""SynthesizeMe's renamed options and values (`population` val, `val_orders`, best-of-n's `judge_file`, evaluate's
method `baseline`, formerly `default`): the former names are taken for one release as flags, experiment keys and
`prefcraft.run` arguments, with a warning naming the new one."""

from pathlib import Path

from prefcraft.commands.main import make_parser
from prefcraft.components.synthesizeme.charts import comparisons
from prefcraft.components.synthesizeme.commands import compare
from prefcraft.components.synthesizeme.demo import DEMO_METHODS, DemoOutcome
from prefcraft.components.synthesizeme.evaluation import METHODS, MethodOutcome
from prefcraft.components.synthesizeme.fit import FitSummary
from prefcraft.components.synthesizeme.options import BestOfNOptions, CompilePersonaOptions, EvaluateOptions, FitOptions
from prefcraft.components.synthesizeme.report import format_comparison
from prefcraft.engine.usage import LMUsage
from prefcraft.experiments.files import load_experiment
from prefcraft.metrics.pairwise import Judgment, pairwise_report
from prefcraft.report_parts.records import RunRecord


def test_the_new_names_are_taken_without_a_warning(caplog):
    parser = make_parser()
    args = parser.parse_args(["synthesizeme", "fit", "--population", "val", "--val-orders", "both_orders"])
    assert (args.population, args.val_orders) == ("val", "both_orders")
    args = parser.parse_args(["synthesizeme", "best-of-n", "--judge-file", "u1.json", "--requests", "r.jsonl"])
    assert str(args.judge_file) == "u1.json"
    assert "is now" not in caplog.text


def test_the_former_flags_are_taken_for_one_release_naming_the_new_ones(caplog):
    parser = make_parser()
    args = parser.parse_args(["synthesizeme", "fit", "--population", "validation", "--validation", "both_orders"])
    assert (args.population, args.val_orders) == ("val", "both_orders")
    assert "'validation' is now 'val'" in caplog.text and "--validation is now --val-orders" in caplog.text
    assert parser.parse_args(["synthesizeme", "compile-persona", "--train-users", "a", "--val-users", "b", "--output",
                              "p.json", "--validation", "both_orders"]).val_orders == "both_orders"
    args = parser.parse_args(["synthesizeme", "best-of-n", "--judge", "u1.json", "--requests", "r.jsonl"])
    assert str(args.judge_file) == "u1.json" and "--judge is now --judge-file" in caplog.text


def test_the_former_keys_and_value_are_taken_in_a_file_and_as_arguments(caplog, tmp_path):
    experiment = tmp_path / "synthesizeme.toml"
    experiment.write_text('name = "t"\ncomponent = "synthesizeme"\n[steps.fit]\npopulation = "validation"\n'
                          'validation = "both_orders"\n')
    assert load_experiment(experiment).steps["fit"] == {"population": "val", "val_orders": "both_orders"}
    assert "option validation is now val_orders" in caplog.text
    options = FitOptions.model_validate({"population": "validation", "validation": "both_orders"})
    assert (options.population, options.val_orders) == ("val", "both_orders")
    compiled = CompilePersonaOptions(train_users=["a"], val_users=["b"], output=Path("p.json"),
                                     validation="both_orders")
    assert compiled.val_orders == "both_orders"
    best = BestOfNOptions(judge=Path("u1.json"), requests=Path("r.jsonl"))
    assert best.judge_file == Path("u1.json") and "option judge is now judge_file" in caplog.text


def test_the_former_default_method_is_taken_for_one_release_as_the_baseline(caplog, tmp_path):
    parser = make_parser()
    args = parser.parse_args(["synthesizeme", "evaluate", "--methods", "baseline", "synthesizeme"])
    assert args.methods == ["baseline", "synthesizeme"] and "is now" not in caplog.text
    args = parser.parse_args(["synthesizeme", "evaluate", "--methods", "default", "memory"])
    assert args.methods == ["baseline", "memory"] and "'default' is now 'baseline'" in caplog.text
    caplog.clear()
    experiment = tmp_path / "synthesizeme.toml"
    experiment.write_text('name = "t"\ncomponent = "synthesizeme"\n[steps.evaluate]\n'
                          'methods = ["default", "persona"]\n')
    assert load_experiment(experiment).steps["evaluate"] == {"methods": ["baseline", "persona"]}
    assert "is now 'baseline'" in caplog.text
    caplog.clear()
    assert EvaluateOptions(methods=["default"]).methods == ["baseline"] and "is now 'baseline'" in caplog.text
    assert EvaluateOptions().methods == ["baseline"] and METHODS[0] == "baseline" and "default" not in METHODS
    assert DEMO_METHODS == ["baseline", "synthesizeme"]


def test_the_charts_report_and_tour_pick_the_baseline_by_its_name():
    metrics = {"baseline_accuracy": 0.5, "synthesizeme_accuracy": 0.75}
    run = RunRecord("r", "evaluate", "FINISHED", 0, 1, {"methods": "baseline,synthesizeme"}, metrics, None)
    [chart] = comparisons(run)
    assert [(row.label, row.baseline) for row in chart.rows] == [("baseline", True), ("synthesizeme", False)]
    judgments = [Judgment("u1", "p1", "chosen_first", "First", True),
                 Judgment("u1", "p1", "chosen_second", "First", False)]
    outcome = MethodOutcome(pairwise_report(judgments), LMUsage(), judgments)
    lines = format_comparison({"baseline": outcome.report, "synthesizeme": outcome.report}).splitlines()
    assert lines[1].startswith("baseline ") and lines[3].split() == ["per", "user", "baseline", "synthesizeme"]
    comparison = compare(DemoOutcome(FitSummary(), {"baseline": outcome, "synthesizeme": outcome}))
    assert comparison.baseline == "baseline (no user context)" and comparison.baseline_score == 0.5
