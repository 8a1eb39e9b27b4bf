"""Which PersonalRewardBench users a step reads: the benchmark splits its users 40/10/50 into train, validation (the
population `val`) and test users (the Hugging Face dataset's three splits, `train`, `validation` and `test`; the paper's
Table 3 is over the test users), and each user's pairs into context train, context validation and target pairs (every
row's `split` column).

A Hugging Face dataset name, or a local folder holding its split files (`train-*.parquet`, `validation-*`, `test-*`, as
the hub stores them), is read for the chosen population only. A single file is read whole: it holds the users it holds
(one of the hub's split files, or the bundled sample users, whose rows mark only each pair's split).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefcraft.errors import ConfigError
from prefcraft.loaders.personal_reward_bench import PreferencePair, load_pairs

Population = Literal["train", "val", "test", "all"]
TABLE_POPULATION: Population = "test"
HUB_SPLITS: dict[str, str] = {"train": "train", "val": "validation", "test": "test"}
"""Each population's split in the dataset (its split files are named after it: `validation-*` for `val`)."""
FILE_SUFFIXES = {".json", ".jsonl", ".parquet"}


def load_population(source: str | Path, population: Population) -> list[PreferencePair]:
    """The pairs of `population`'s users in `source`; a single file's pairs whatever the population (it cannot be
    split by user: asking it for another population than the default is refused)."""
    if Path(source).suffix not in FILE_SUFFIXES:
        return load_pairs(source, hub_split=None if population == "all" else HUB_SPLITS[population])
    if population not in (TABLE_POPULATION, "all"):
        raise ConfigError(
            f"{source} is a single file: its users cannot be told apart by population ({population!r} asked)",
            "give the dataset's name or a local folder of its split files (train-*, validation-*, test-*), or a file "
            "holding only the users you want",
        )
    return load_pairs(source)
