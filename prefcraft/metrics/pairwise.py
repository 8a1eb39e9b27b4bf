"""PersonalRewardBench pairwise accuracy: every test pair is judged in both orders.

A judgment is correct when the judge names the position of the chosen response. Unparseable output is wrong.
Per pair, a tie (the same position named in both orders) or any wrong order scores 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import dspy

from prefcraft.metrics.stats import Estimate, bootstrap_mean

Order = Literal["chosen_first", "chosen_second"]


def preference_correct(example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> bool:
    """The per-example metric for dspy.Evaluate and the optimizers."""
    return getattr(prediction, "preference", None) == example.preference


@dataclass(frozen=True)
class Judgment:
    user_id: str
    pair_id: str
    order: Order
    predicted: str | None
    correct: bool


@dataclass(frozen=True)
class PairwiseReport:
    accuracy: Estimate
    """Over every judgment, both orders pooled: the headline number."""
    chosen_first: Estimate
    chosen_second: Estimate
    pair_accuracy: Estimate
    """Over pairs: 1 only when both orders are right."""
    consistency: float
    """Share of pairs whose winner is the same in both orders."""
    parse_failures: int
    per_user: dict[str, Estimate]

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        metrics = {
            f"{prefix}accuracy": self.accuracy.mean,
            f"{prefix}accuracy_ci_low": self.accuracy.low,
            f"{prefix}accuracy_ci_high": self.accuracy.high,
            f"{prefix}accuracy_chosen_first": self.chosen_first.mean,
            f"{prefix}accuracy_chosen_second": self.chosen_second.mean,
            f"{prefix}pair_accuracy": self.pair_accuracy.mean,
            f"{prefix}consistency": self.consistency,
            f"{prefix}parse_failures": float(self.parse_failures),
        }
        return {name: value for name, value in metrics.items() if value == value}  # drop NaN (no items)


def pairwise_report(judgments: Iterable[Judgment], *, seed: int = 0) -> PairwiseReport:
    judgments = list(judgments)
    by_pair: dict[tuple[str, str], dict[Order, Judgment]] = defaultdict(dict)
    for judgment in judgments:
        by_pair[(judgment.user_id, judgment.pair_id)][judgment.order] = judgment
    complete = [orders for orders in by_pair.values() if len(orders) == 2]
    per_user: dict[str, list[float]] = defaultdict(list)
    for judgment in judgments:
        per_user[judgment.user_id].append(float(judgment.correct))

    def mean_of(order: Order) -> Estimate:
        return bootstrap_mean([float(j.correct) for j in judgments if j.order == order], seed=seed)

    return PairwiseReport(
        accuracy=bootstrap_mean([float(j.correct) for j in judgments], seed=seed),
        chosen_first=mean_of("chosen_first"),
        chosen_second=mean_of("chosen_second"),
        pair_accuracy=bootstrap_mean([float(all(j.correct for j in o.values())) for o in complete], seed=seed),
        consistency=sum(o["chosen_first"].correct == o["chosen_second"].correct for o in complete) / len(complete)
        if complete
        else float("nan"),
        parse_failures=sum(j.predicted is None for j in judgments),
        per_user={user: bootstrap_mean(scores, seed=seed) for user, scores in sorted(per_user.items())},
    )
