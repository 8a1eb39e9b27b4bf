"""What `select` and `evaluate` share about topics: the pairs grouped by topic, and a topic as part of a metric name."""

from __future__ import annotations

import re
from collections.abc import Sequence

from prefcraft.loaders.personal_reward_bench import PreferencePair, pair_id

ALL_TOPICS = "all"
"""The name of the one selection made over every dev pair (scope "all")."""


def by_topic(pairs: Sequence[PreferencePair], topic_of: dict[str, str]) -> dict[str, list[PreferencePair]]:
    """`pairs` grouped by topic, topics in sorted order, pairs in file order."""
    groups: dict[str, list[PreferencePair]] = {}
    for pair in pairs:
        groups.setdefault(topic_of[pair_id(pair)], []).append(pair)
    return dict(sorted(groups.items()))


def metric_name(topic: str) -> str:
    """A topic as a part of an MLflow metric name."""
    return re.sub(r"[^0-9A-Za-z_.-]", "_", topic)
