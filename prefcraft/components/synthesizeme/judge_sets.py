"""The judge examples a fit reads from one user's pairs, in the orders the reference code shows them.

The reference turns each data row into one judgment, in the order its `flip` column gives (true: the chosen response
first), for the train pairs it bootstraps and for the validation pairs its candidates are scored on. Here every train
pair comes in both orders (the optimizer needs both for `verification = "both_orders"`), each marked with the order its
row shows (`row_order`), which the optimizer judges it in; the validation pairs come in that one order, or in both
(`val_orders = "both_orders"`). A row without `flip` gets an order drawn by the seed, half of such pairs each way.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal

import dspy

from prefcraft.loaders.personal_reward_bench import PreferencePair, judge_examples

ValidationOrders = Literal["one_order", "both_orders"]
ORDERS = ("chosen_first", "chosen_second")


def row_orders(pairs: Sequence[PreferencePair], seed: int) -> list[str]:
    """The order each pair's row shows it in: its `flip`, else a seeded draw (half of those pairs each way)."""
    rng = random.Random(seed)
    unknown = [index for index, pair in enumerate(pairs) if pair.flip is None]
    start = rng.randrange(2)
    drawn = [ORDERS[(start + index) % 2] for index in range(len(unknown))]
    rng.shuffle(drawn)
    orders = [ORDERS[0] if pair.flip else ORDERS[1] for pair in pairs]
    for index, order in zip(unknown, drawn, strict=True):
        orders[index] = order
    return orders


def fit_sets(
    train: Sequence[PreferencePair], val: Sequence[PreferencePair], val_orders: ValidationOrders, seed: int
) -> tuple[list[dspy.Example], list[dspy.Example]]:
    """A fit's trainset (every pair in both orders, marked with its row's order) and valset."""
    trainset = [example.copy(row_order=order) for pair, order in zip(train, row_orders(train, seed), strict=True)
                for example in judge_examples(pair)]
    valset = [example for pair, order in zip(val, row_orders(val, seed), strict=True)
              for example in judge_examples(pair) if val_orders == "both_orders" or example.order == order]
    return trainset, valset
