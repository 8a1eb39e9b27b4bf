"""PersonalRewardBench pairwise accuracy (seeds/002 Table 3, "95% bootstrapped confidence intervals"; the order and
interval rules follow the reference code, personalrm/synthesizeme.py `evaluate`): every test pair is judged in both
orders.

A judgment is correct when the judge names the position of the chosen response. Unparseable output is wrong, as in
the paper's Table 3: the reference's `evaluate` scores a judgment +1 right, -1 wrong and 0 unparseable, then clips at 0
(`max(0, result)`), and its `exact_match` scores an unparseable answer 0. Its first `evaluate` averaged the unclipped
scores, which puts an unparseable judgment half-way: that reading is reported beside (`accuracy_unparseable_half`).
Per pair, a tie (the same position named in both orders) or any wrong order scores 0. A pair is consistent when the
judge names the same response in both orders (the position it names flips with the order); a pair with an
unparseable order is left out of consistency and counted apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import dspy

from prefcraft.metrics.stats import Estimate, bootstrap_mean, cluster_bootstrap_mean, reference_bootstrap_mean

Order = Literal["chosen_first", "chosen_second"]
CHOSEN_POSITION: dict[Order, str] = {"chosen_first": "First", "chosen_second": "Second"}


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
    """Over every judgment, both orders pooled: the headline number. Its interval resamples pairs, as a pair's two
    orders are correlated."""
    accuracy_per_judgment_ci: Estimate
    """The same mean with the reference code's interval (scipy's basic bootstrap, 9,999 resamples of single
    judgments): for comparison with the paper, narrower than it should be."""
    chosen_first: Estimate
    chosen_second: Estimate
    pair_accuracy: Estimate
    """Over pairs: 1 only when both orders are right."""
    consistency: float
    """Share of pairs whose winner is the same response in both orders, over the pairs parsed in both orders."""
    consistency_left_out: int
    """Pairs left out of consistency because an order's output was unparseable."""
    parse_failures: int
    accuracy_unparseable_half: float
    """Over every judgment, an unparseable one scoring 1/2 instead of 0: the reading of the reference's first
    `evaluate`, beside the paper's rule (`accuracy`)."""
    per_user: dict[str, Estimate]
    """Accuracy over each user's judgments, its interval resampling the user's pairs."""

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        metrics = {
            f"{prefix}accuracy": self.accuracy.mean,
            f"{prefix}accuracy_ci_low": self.accuracy.low,
            f"{prefix}accuracy_ci_high": self.accuracy.high,
            f"{prefix}accuracy_per_judgment_ci_low": self.accuracy_per_judgment_ci.low,
            f"{prefix}accuracy_per_judgment_ci_high": self.accuracy_per_judgment_ci.high,
            f"{prefix}accuracy_chosen_first": self.chosen_first.mean,
            f"{prefix}accuracy_chosen_second": self.chosen_second.mean,
            f"{prefix}pair_accuracy": self.pair_accuracy.mean,
            f"{prefix}consistency": self.consistency,
            f"{prefix}consistency_left_out": float(self.consistency_left_out),
            f"{prefix}parse_failures": float(self.parse_failures),
            f"{prefix}accuracy_unparseable_half": self.accuracy_unparseable_half,
        }
        return {name: value for name, value in metrics.items() if value == value}  # drop NaN (no items)


def pairwise_report(judgments: Iterable[Judgment], *, seed: int = 0) -> PairwiseReport:
    judgments = list(judgments)
    pairs = _by_pair(judgments)
    complete = [orders for pair in pairs.values() if len(orders := {j.order: j for j in pair}) == 2]
    consistency, consistency_left_out = _consistency(complete)

    def mean_of(order: Order) -> Estimate:
        return bootstrap_mean([float(j.correct) for j in judgments if j.order == order], seed=seed)

    return PairwiseReport(
        accuracy=_accuracy_by_pair(pairs.values(), seed),
        accuracy_per_judgment_ci=reference_bootstrap_mean([float(j.correct) for j in judgments], seed=seed),
        chosen_first=mean_of("chosen_first"),
        chosen_second=mean_of("chosen_second"),
        pair_accuracy=bootstrap_mean([float(all(j.correct for j in o.values())) for o in complete], seed=seed),
        consistency=consistency,
        consistency_left_out=consistency_left_out,
        parse_failures=sum(j.predicted is None for j in judgments),
        accuracy_unparseable_half=_mean([0.5 if _winner(j) is None else float(j.correct) for j in judgments]),
        per_user={user: _accuracy_by_pair(user_pairs, seed) for user, user_pairs in _by_user(pairs).items()},
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _by_pair(judgments: list[Judgment]) -> dict[tuple[str, str], list[Judgment]]:
    pairs: dict[tuple[str, str], list[Judgment]] = defaultdict(list)
    for judgment in judgments:
        pairs[(judgment.user_id, judgment.pair_id)].append(judgment)
    return pairs


def _by_user(pairs: dict[tuple[str, str], list[Judgment]]) -> dict[str, list[list[Judgment]]]:
    users: dict[str, list[list[Judgment]]] = defaultdict(list)
    for (user_id, _), pair in pairs.items():
        users[user_id].append(pair)
    return dict(sorted(users.items()))


def _accuracy_by_pair(pairs: Iterable[list[Judgment]], seed: int) -> Estimate:
    return cluster_bootstrap_mean([[float(j.correct) for j in pair] for pair in pairs], seed=seed)


def _consistency(pairs: list[dict[Order, Judgment]]) -> tuple[float, int]:
    """The share of consistent pairs among those parsed in both orders, and how many were left out."""
    winners = [(_winner(orders["chosen_first"]), _winner(orders["chosen_second"])) for orders in pairs]
    parsed = [(first, second) for first, second in winners if first and second]
    share = sum(first == second for first, second in parsed) / len(parsed) if parsed else float("nan")
    return share, len(winners) - len(parsed)


def _winner(judgment: Judgment) -> str | None:
    """The response the judge named, "chosen" or "rejected"; None when its output was unparseable."""
    if judgment.predicted not in CHOSEN_POSITION.values():
        return None
    return "chosen" if judgment.predicted == CHOSEN_POSITION[judgment.order] else "rejected"
