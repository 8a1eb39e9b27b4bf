"""Position bias of a pairwise judge (seeds/004 §4.2.1, "Positional Bias"): the share of its judgments that name the
first position.

An unbiased judge over pairs shown in both orders names the first position half of the time whatever its accuracy;
SenseJudge's paper reports how far from that each judge is. Unparseable judgments are left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from prefcraft.metrics.pairwise import Judgment
from prefcraft.metrics.stats import Estimate, cluster_bootstrap_mean


def first_position_share(judgments: Iterable[Judgment], *, seed: int = 0) -> Estimate:
    """The share of parsed judgments naming 'First', with an interval that resamples pairs (a pair's two orders are
    correlated)."""
    pairs: dict[tuple[str, str], list[float]] = defaultdict(list)
    for judgment in judgments:
        if judgment.predicted in ("First", "Second"):
            pairs[(judgment.user_id, judgment.pair_id)].append(float(judgment.predicted == "First"))
    return cluster_bootstrap_mean(list(pairs.values()), seed=seed)
