import pytest

from prefcraft.metrics.pairwise import Judgment
from prefcraft.metrics.position_bias import first_position_share


def judgment(pair: str, order: str, predicted: str | None) -> Judgment:
    chosen_position = "First" if order == "chosen_first" else "Second"
    return Judgment("annotator", pair, order, predicted, predicted == chosen_position)


def test_a_judge_that_always_says_first_has_full_first_position_share():
    judgments = [judgment(f"p{i}", order, "First") for i in range(3) for order in ("chosen_first", "chosen_second")]
    assert first_position_share(judgments).mean == 1.0


def test_unparseable_judgments_are_left_out():
    judgments = [judgment("p0", "chosen_first", "First"), judgment("p0", "chosen_second", "Second"),
                 judgment("p1", "chosen_first", None), judgment("p1", "chosen_second", "First")]
    share = first_position_share(judgments)
    assert share.mean == pytest.approx(2 / 3) and share.n == 3
