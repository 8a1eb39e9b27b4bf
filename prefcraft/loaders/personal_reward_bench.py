"""PersonalRewardBench rows (SynthesizeMe's `*_personalized_0125` datasets) from the Hugging Face hub or local files.

One row is one preference pair of one user. Columns used: `user_id`, `split` (train / val / test, per pair),
`context` (list of {role, content}), `chosen` and `rejected` ({role, content}); `conversation_id`, `turns`, `type`
and `flip` are kept when present; every other column is ignored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import dspy
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from prefcraft.errors import DataError

HUB_DATASETS = ("MichaelR207/prism_personalized_0125", "MichaelR207/chatbot_arena_personalized_0125")
REQUIRED_COLUMNS = ("user_id", "split", "context", "chosen", "rejected")


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str
    content: str


class PreferencePair(BaseModel):
    """One user's preference between two responses to the same conversation."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    user_id: str
    split: Literal["train", "val", "test"]
    context: tuple[Message, ...]
    chosen: Message
    rejected: Message
    conversation_id: str | None = None
    turns: int | None = None
    type: str | None = None
    flip: bool | None = None

    @field_validator("user_id", "conversation_id", mode="before")
    @classmethod
    def _ids_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value

    @field_validator("context")
    @classmethod
    def _context_not_empty(cls, value: tuple[Message, ...]) -> tuple[Message, ...]:
        if not value:
            raise ValueError("the conversation has no messages")
        return value


@dataclass
class UserPairs:
    """One user's pairs in file order (PersonalRewardBench keeps each user's rows in temporal order)."""

    user_id: str
    train: list[PreferencePair] = field(default_factory=list)
    val: list[PreferencePair] = field(default_factory=list)
    test: list[PreferencePair] = field(default_factory=list)

    @property
    def context_pairs(self) -> list[PreferencePair]:
        """The pairs a personalization method may learn from (train then val)."""
        return self.train + self.val


def load_pairs(source: str | Path, *, hub_split: str | None = None) -> list[PreferencePair]:
    """Load and validate every row of `source`: a .json/.jsonl/.parquet file, or a Hugging Face dataset name.

    Raises DataError naming the file, row and field of the first invalid row.
    """
    rows = read_rows(source, hub_split=hub_split)
    return [_parse_row(row, str(source), index) for index, row in enumerate(rows)]


def read_rows(
    source: str | Path, *, hub_config: str | None = None, hub_split: str | None = None
) -> Iterable[dict[str, Any]]:
    """The raw rows of a .json/.jsonl/.parquet file, or of a Hugging Face dataset (optionally one config and split)."""
    path = Path(source)
    if path.suffix in {".json", ".jsonl", ".parquet"}:
        if not path.is_file():
            raise DataError(path, None, None, "file not found")
        return _read_local(path)
    return _read_hub(str(source), hub_config, hub_split)


def group_by_user(pairs: Iterable[PreferencePair]) -> dict[str, UserPairs]:
    users: dict[str, UserPairs] = {}
    for pair in pairs:
        user = users.setdefault(pair.user_id, UserPairs(pair.user_id))
        getattr(user, pair.split).append(pair)
    return users


def _parse_row(row: Any, source: str, index: int) -> PreferencePair:
    if not isinstance(row, dict):
        raise DataError(source, index, None, f"expected an object, got {type(row).__name__}")
    for column in REQUIRED_COLUMNS:
        if column not in row:
            raise DataError(source, index, column, "missing column", f"required columns: {', '.join(REQUIRED_COLUMNS)}")
    try:
        return PreferencePair.model_validate(row)
    except ValidationError as error:
        issue = error.errors()[0]
        location = ".".join(str(part) for part in issue["loc"])
        raise DataError(source, index, location, issue["msg"]) from None


def _read_local(path: Path) -> Iterator[dict[str, Any]]:
    if path.suffix == ".parquet":
        from datasets import Dataset

        yield from Dataset.from_parquet(str(path))
        return
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise DataError(path, None, None, f"not valid JSON ({error})") from None
        if not isinstance(data, list):
            raise DataError(path, None, None, "expected a JSON list of rows")
        yield from data
        return
    for number, line in enumerate(text.splitlines()):
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(path, number, None, f"not valid JSON ({error})") from None


def _read_hub(name: str, config: str | None, split: str | None) -> Iterator[dict[str, Any]]:
    from datasets import load_dataset

    try:
        loaded = load_dataset(name, split=split) if config is None else load_dataset(name, config, split=split)
    except Exception as error:  # datasets raises many types for "not reachable / not found"
        raise DataError(
            name, None, None, f"could not load the dataset from the Hugging Face hub ({type(error).__name__}: {error})",
            "check the name and your connection, or pass a local .jsonl/.json/.parquet file of the same schema",
        ) from None
    for part in loaded.values() if hasattr(loaded, "values") else [loaded]:
        yield from part


JUDGE_INPUTS = ("conversation", "first_completion", "second_completion")


def format_conversation(messages: Iterable[Message]) -> str:
    return "\n".join(f"[{message.role}]: {message.content}" for message in messages)


def pair_id(pair: PreferencePair) -> str:
    """A stable id for a pair: its conversation id, or a digest of its content."""
    if pair.conversation_id:
        return pair.conversation_id
    return hashlib.sha256(pair.model_dump_json().encode()).hexdigest()[:16]


def judge_examples(pair: PreferencePair) -> list[dspy.Example]:
    """The pair in both orders, as judge examples; only the conversation and completions are model inputs."""
    shared = {"conversation": format_conversation(pair.context), "user_id": pair.user_id, "pair_id": pair_id(pair)}
    chosen, rejected = pair.chosen.content, pair.rejected.content
    return [
        dspy.Example(
            **shared, first_completion=chosen, second_completion=rejected, preference="First", order="chosen_first"
        ).with_inputs(*JUDGE_INPUTS),
        dspy.Example(
            **shared, first_completion=rejected, second_completion=chosen, preference="Second", order="chosen_second"
        ).with_inputs(*JUDGE_INPUTS),
    ]
