"""The tour's closing table keeps its columns aligned whatever the length of a component's metric or method names."""

from prefcraft.commands.tour_table import TourRow, format_tour
from prefcraft.components.component import Comparison
from prefcraft.engine.usage import LMUsage


def test_columns_stay_aligned_when_a_metric_is_longer_than_the_column():
    rows = [TourRow("SenseJudge", Comparison("accuracy, both orders, mean of topics (simulated labels)",
                                             "no description", 0.5, "selected (2 of 10, per topic)", 0.5, "%"),
                    LMUsage(calls=131), 154.0),
            TourRow("CUPID", Comparison("response score (judge, 1-10)", "no preference", 4.0, "inferred preference",
                                        10.0, "points"), LMUsage(calls=24), 44.0),
            TourRow("LaMP-QA", skipped="needs data")]
    lines = format_tour(rows).splitlines()
    header, sensejudge, cupid, skipped, total = lines[3:]
    assert len({len(line) for line in (header, sensejudge, cupid, total)}) == 1
    for column in ("baseline", "personalized"):
        at = header.index(column)
        assert sensejudge[at - 1] == cupid[at - 1] == " " and sensejudge[at] != " " and cupid[at] != " "
    assert sensejudge.endswith("131   2m34s") and cupid.endswith("24   0m44s") and total.endswith("155   3m18s")
    assert skipped == "LaMP-QA       skipped: needs data"
