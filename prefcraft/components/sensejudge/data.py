"""SenseBench dialogues: the SenseJudge paper's real multi-turn user prompts (Chinese and English), from its JSON file.

The file is a list of dialogues; a dialogue is a list of turns `{"from": "System" | "Human" | "Assistant", "content":
[{"type": "text", "value": str}], "topic"?: "sense_bmk:<Topic>"}` whose first turn carries the topic; other keys
(`name`) are ignored. A dialogue becomes its context (the turns before its last Human turn) and its request (that
turn's text); Assistant turns after the last request are the published answers to it and are dropped.

prefcraft does not ship the file: the upstream repository states no licence for it, so it is read from a path the
user gives (the file, or a folder holding `new_sense_bmk.json`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import Message, read_rows

FILE_NAME = "new_sense_bmk.json"
TOPIC_PREFIX = "sense_bmk:"
ROLES = {"System": "system", "Human": "user", "Assistant": "assistant"}
CUT = "\n[...]\n"


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["text"]
    value: str


class _Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    speaker: Literal["System", "Human", "Assistant"] = Field(alias="from")
    content: list[_Part] = Field(min_length=1)
    topic: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(part.value for part in self.content)


_DIALOGUE = TypeAdapter(list[_Turn])


@dataclass(frozen=True)
class Dialogue:
    index: int
    """Position in the file, so that a selection of dialogues can be named and repeated."""
    topic: str
    context: tuple[Message, ...]
    request: str

    def messages(self, max_chars: int | None = None) -> tuple[Message, ...]:
        """The latest turns that fit in `max_chars` characters, always ending with the request (whose middle is cut
        out when it alone is longer)."""
        request = Message(role="user", content=_shorten(self.request, max_chars))
        kept, used = [request], len(request.content)
        for turn in reversed(self.context):
            if max_chars is not None and used + len(turn.content) > max_chars:
                break
            kept.append(turn)
            used += len(turn.content)
        return tuple(reversed(kept))


def load_dialogues(source: str | Path) -> list[Dialogue]:
    """Every dialogue of the SenseBench file (or of `<folder>/new_sense_bmk.json`); raises DataError naming the file,
    the dialogue and the field of the first one that does not fit the schema."""
    path = Path(source)
    if path.is_dir():
        path = path / FILE_NAME
    if path.suffix != ".json":
        raise DataError(path, None, None, "expected SenseBench's JSON file", f"pass the path of {FILE_NAME}")
    return [_parse_dialogue(row, path, index) for index, row in enumerate(read_rows(path))]


def _parse_dialogue(row: Any, path: Path, index: int) -> Dialogue:
    try:
        turns = _DIALOGUE.validate_python(row)
    except ValidationError as error:
        issue = error.errors()[0]
        raise DataError(path, index, _field_name(issue["loc"]), issue["msg"]) from None
    if not turns:
        raise DataError(path, index, None, "the dialogue has no turns")
    if not turns[0].topic or not turns[0].topic.startswith(TOPIC_PREFIX):
        raise DataError(path, index, "turn[0].topic", f"expected a topic '{TOPIC_PREFIX}<Topic>' on the first turn")
    last_request = max((i for i, turn in enumerate(turns) if turn.speaker == "Human"), default=None)
    if last_request is None:
        raise DataError(path, index, None, "the dialogue has no Human turn, so no request to answer")
    context = tuple(Message(role=ROLES[turn.speaker], content=turn.text) for turn in turns[:last_request])
    return Dialogue(index=index, topic=turns[0].topic.removeprefix(TOPIC_PREFIX), context=context,
                    request=turns[last_request].text)


def _field_name(location: tuple[int | str, ...]) -> str | None:
    """A pydantic location such as (2, 'content', 0, 'value') as `turn[2].content[0].value`; None for the dialogue."""
    if not location:
        return None
    return "turn" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location)


def _shorten(text: str, max_chars: int | None) -> str:
    if max_chars is None or len(text) <= max_chars:
        return text
    keep = max(max_chars - len(CUT), 0)
    return text[: (keep + 1) // 2] + CUT + text[len(text) - keep // 2:]
