from prefcraft.components.synthesizeme.report import format_comparison, format_report
from prefcraft.engine.usage import LMUsage
from prefcraft.metrics.pairwise import Judgment, pairwise_report


def judgments(user: str, picks: list[tuple[str, str]]) -> list[Judgment]:
    return [
        judgment
        for index, (first, second) in enumerate(picks)
        for judgment in (Judgment(user, f"p{index}", "chosen_first", first, first == "First"),
                         Judgment(user, f"p{index}", "chosen_second", second, second == "Second"))
    ]


def test_comparison_has_a_row_per_method_and_a_column_per_method_per_user():
    biased = pairwise_report(judgments("u1", [("First", "First")]) + judgments("u2", [("First", "First")]))
    personal = pairwise_report(judgments("u1", [("First", "Second")]))
    lines = format_comparison({"baseline": biased, "synthesizeme": personal}).splitlines()
    assert lines[1].startswith("baseline") and " 50.0%" in lines[1]
    assert lines[2].startswith("synthesizeme") and "100.0%" in lines[2]
    assert lines[3].split() == ["per", "user", "baseline", "synthesizeme"]
    assert lines[4].split() == ["u1", "50.0%", "100.0%"]
    assert lines[5].split() == ["u2", "50.0%", "-"]


def test_report_shows_both_intervals_and_the_pairs_left_out_of_consistency():
    report = pairwise_report(judgments("u1", [("First", "Second"), ("First", "First"), (None, None)]))
    text = format_report("baseline", report, LMUsage())
    assert f"accuracy over both orders {report.accuracy} (interval over pairs)" in text
    assert f"interval over judgments {report.accuracy_per_judgment_ci}" in text
    assert "consistency 50.0% (pairs left out, unparseable: 1)" in text
    assert "failed judgments (no answer or unparseable) 2" in text
