"""PersonalRewardBench rows (SynthesizeMe's `*_personalized_0125` datasets) from the Hugging Face hub or local files.

One row is one preference pair of one user. Columns used: `user_id`, `split` (train / val / test, per pair),
`context` (list of {role, content}), `chosen` and `rejected` ({role, content}); `conversation_id`, `turns`, `type`
and `flip` are kept when present; every other column is ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from prefcraft.errors import DataError
from prefcraft.options import Split

logger = logging.getLogger(__name__)

VAL_FRACTION = 0.3  # without a val split in the data, the latest 30% of a user's context pairs validate
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
    split: Split
    context: tuple[Message, ...]
    chosen: Message
    rejected: Message
    conversation_id: str | None = None
    turns: int | None = None
    type: str | None = None
    flip: bool | None = None
    repeat: int = 0
    """How many earlier rows of its file hold this same pair (`load_pairs` counts them); 0 for the first."""

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


def train_val_split(
    user: UserPairs, val_fraction: float = VAL_FRACTION
) -> tuple[list[PreferencePair], list[PreferencePair]]:
    """The pairs to fit one user on: the data's own train and val pairs when it has both, else the context pairs cut
    unshuffled, as the reference code cuts them: the first int((1 - val_fraction) n) train, the rest validate.

    Raises DataError for fewer than 2 context pairs. A pair whose chosen and rejected are the same is kept, as the
    reference code keeps it (its judge is right on it by chance).
    """
    pairs = user.context_pairs
    if len(pairs) < 2:
        raise DataError(user.user_id, None, None, f"user has {len(pairs)} context pair(s); a fit needs 2+")
    if user.val and user.train:
        return user.train, user.val
    cut = int(len(pairs) * (1 - val_fraction))  # 1 <= cut < n for n >= 2 and the default fraction
    return pairs[:cut], pairs[cut:]


def load_pairs(source: str | Path, *, hub_split: str | None = None) -> list[PreferencePair]:
    """Load and validate every row of `source`: a .json/.jsonl/.parquet file, or a Hugging Face dataset name.

    Raises DataError naming the file, row and field of the first invalid row. A row repeating an earlier pair is
    kept as a pair of its own, as the reference code loads every row (`repeat` tells it apart), with one warning.
    """
    rows = read_rows(source, hub_split=hub_split)
    pairs = [_parse_row(row, str(source), index) for index, row in enumerate(rows)]
    return _number_repeats(pairs, str(source))


# A local file of rows; any other source is a dataset name.
ROW_FILE_SUFFIXES = frozenset({".json", ".jsonl", ".parquet"})


def read_rows(
    source: str | Path, *, hub_config: str | None = None, hub_split: str | None = None
) -> Iterable[dict[str, Any]]:
    """The raw rows of a .json/.jsonl/.parquet file, or of a Hugging Face dataset (optionally one config and split)."""
    path = Path(source)
    if path.suffix in ROW_FILE_SUFFIXES:
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


def _number_repeats(pairs: list[PreferencePair], source: str) -> list[PreferencePair]:
    """`pairs` with each repeat of an earlier row's pair numbered (`repeat`), so that its id is its own; one warning
    names the first repeated row and how many there are."""
    rows_of: dict[str, list[int]] = {}
    numbered = []
    for index, pair in enumerate(pairs):
        earlier = rows_of.setdefault(pair_id(pair), [])
        numbered.append(pair.model_copy(update={"repeat": len(earlier)}) if earlier else pair)
        earlier.append(index)
    repeats = [(rows[0], row) for rows in rows_of.values() for row in rows[1:]]
    if repeats:
        first, row = min(repeats, key=lambda repeat: repeat[1])
        where = DataError(source, row, "conversation_id" if pairs[row].conversation_id else None, "")
        logger.warning("%s the same pair as row %d (same user, conversation, context and responses), and %d more "
                       "repeated row(s): each kept as a pair of its own, as the reference code loads them",
                       str(where).rstrip(), first, len(repeats) - 1)
    return numbered


def _read_local(path: Path) -> Iterator[dict[str, Any]]:
    if path.suffix == ".parquet":
        yield from _read_parquet(path)
        return
    if path.suffix == ".json":
        yield from _read_json(path)
        return
    for number, line in enumerate(path.read_bytes().splitlines()):
        if line.strip():
            try:
                yield json.loads(_decode(line, path, number))
            except json.JSONDecodeError as error:
                raise DataError(path, number, None, f"not valid JSON ({error})") from None


def _read_parquet(path: Path) -> Iterator[dict[str, Any]]:
    from datasets import Dataset

    rows_read = 0
    try:
        for row in Dataset.from_parquet(str(path)):
            yield row
            rows_read += 1
    except UnicodeDecodeError as error:  # arrow checks UTF-8 only when a value becomes a Python string
        raise _not_utf8(path, rows_read, error) from None


def _read_json(path: Path) -> Iterator[Any]:
    try:
        data = json.loads(_decode(path.read_bytes(), path, None))
    except json.JSONDecodeError as error:
        raise DataError(path, None, None, f"not valid JSON ({error})") from None
    if not isinstance(data, list):
        raise DataError(path, None, None, "expected a JSON list of rows")
    yield from data


def _decode(data: bytes, path: Path, row: int | None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _not_utf8(path, row, error) from None


def _not_utf8(path: Path, row: int | None, error: UnicodeDecodeError) -> DataError:
    return DataError(path, row, None, f"not valid UTF-8 (byte {error.object[error.start]:#04x}: {error.reason})",
                     "save the file as UTF-8")


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


def as_conversation_text(conversation: str | Iterable[Mapping[str, str]]) -> str:
    """One user message, or the messages so far as {"role": ..., "content": ...}, as a judge was fitted on them
    (`format_conversation`)."""
    if isinstance(conversation, str):
        return format_conversation([Message(role="user", content=conversation)])
    return format_conversation(Message.model_validate(message) for message in conversation)


def pair_id(pair: PreferencePair) -> str:
    """A stable id for a pair: `<conversation_id>#<8 hex>`, or 16 hex without a conversation id.

    The digest covers the user, the context and both responses, so the pairs one conversation yields (one per turn,
    one per rejected response) get ids of their own; a row repeating an earlier pair adds `~<repeat>`.
    """
    content = pair.model_dump_json(include={"user_id", "context", "chosen", "rejected"})
    digest = hashlib.sha256(content.encode()).hexdigest()
    identifier = f"{pair.conversation_id}#{digest[:8]}" if pair.conversation_id else digest[:16]
    return f"{identifier}~{pair.repeat}" if pair.repeat else identifier


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


def judge_set(pairs: Iterable[PreferencePair]) -> list[dspy.Example]:
    """Every pair in both orders, as judge examples: a trainset or valset for the judge's optimizers."""
    return [example for pair in pairs for example in judge_examples(pair)]
