"""Users' demographic profiles from the PRISM survey, for SynthesizeMe's "LLM judge + Demographics" baseline.

The survey (`HannahRoseKirk/prism-alignment`, config `survey`) has one row per `user_id`. A profile lists the
attributes of the paper's demographic prompt that the row has, one per line ("Age: 25-34 years old"); a nested
value (religion, ethnicity) becomes compact "key: value" text. A user with none of them gets no profile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import read_rows

PRISM_SURVEY = "HannahRoseKirk/prism-alignment"
# (label, column, key inside the column's nested value or None): the paper's attributes in its order, and ethnicity.
ATTRIBUTES = (
    ("Age", "age", None),
    ("Gender", "gender", None),
    ("Employment Status", "employment_status", None),
    ("Education", "education", None),
    ("Marital Status", "marital_status", None),
    ("Birth Country", "location", "birth_country"),
    ("Living Country", "location", "reside_country"),
    ("Religion", "religion", None),
    ("Ethnicity", "ethnicity", None),
)


def load_profiles(source: str | Path, *, config: str = "survey", split: str = "train") -> dict[str, str]:
    """Map each user id of `source` (a .json/.jsonl/.parquet file or a Hugging Face dataset name) to a profile.

    Raises DataError naming the file, row and field of a row without a user id or with a repeated one.
    """
    profiles: dict[str, str] = {}
    first_row: dict[str, int] = {}
    for index, row in enumerate(read_rows(source, hub_config=config, hub_split=split)):
        user_id = _user_id(row, str(source), index)
        if user_id in first_row:
            raise DataError(
                source, index, "user_id", f"user {user_id} already has a profile in row {first_row[user_id]}"
            )
        first_row[user_id] = index
        if profile := profile_text(row):
            profiles[user_id] = profile
    return profiles


def profile_text(row: dict[str, Any]) -> str:
    lines = []
    for label, column, key in ATTRIBUTES:
        value = row.get(column)
        if key is not None:
            value = value.get(key) if isinstance(value, dict) else None
        if text := _as_text(value):
            lines.append(f"{label}: {text}")
    return "\n".join(lines)


def _as_text(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{key}: {text}" for key, item in value.items() if (text := _as_text(item)))
    return "" if value is None else str(value).strip()


def _user_id(row: Any, source: str, index: int) -> str:
    if not isinstance(row, dict):
        raise DataError(source, index, None, f"expected an object, got {type(row).__name__}")
    user_id = row.get("user_id")
    if user_id is None or str(user_id).strip() == "":
        raise DataError(source, index, "user_id", "missing user id", "every survey row needs the user's `user_id`")
    return str(user_id)
