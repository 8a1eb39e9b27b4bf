from prefcraft.components.synthesizeme.report import format_report
from prefcraft.engine.usage import LMUsage
from prefcraft.metrics.pairwise import Judgment, pairwise_report


def test_the_report_gives_the_half_credit_reading_beside_the_papers_accuracy():
    judgments = [Judgment("u1", "p1", "chosen_first", "First", True),
                 Judgment("u1", "p1", "chosen_second", None, False)]
    text = format_report("baseline", pairwise_report(judgments), LMUsage())
    assert "accuracy over both orders  50.0%" in text
    assert "failed judgments (no answer or unparseable) 1" in text
    assert "unparseable judgments scored 1/2, not 0 (the reference's first evaluate): 75.0%" in text
