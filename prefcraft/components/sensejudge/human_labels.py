"""SenseBench's human labels as published upstream (qiongrenpiqida/SenseJudge, `data/input/human_label/`): one JSON
file per annotator, `sense-label1.json` to `sense-label3.json`, each the same pairs labelled by one person.

A file is a list of records `{"prompt": [turn, ...], "chosen": response, "rejected": response, "dataset":
"sense_bmk:<Topic>"}`; other keys are ignored. The files could not be retrieved here, so the rest of the shape is what
the reference code reads: a turn is `{"from": "Human" | "Assistant" | "System", "value" | "content": text}`, a
response `{"value" | "content": text}` or text, and text a string or a list of parts `{"value": str}` (joined). A
prompt given as one string is one user turn.

Read as the reference reads them (`0_get_dev_for_preference.py`, `2_judge.py`):
- a record with the same prompt, topic and two responses (in either order) as an earlier one is dropped;
- in each topic, `dev_pairs_per_topic` (10) records drawn with `random.seed(42)`, reseeded for every topic, are the
  dev pairs, in the order drawn; the others, in file order, are the test pairs. A topic with fewer records is left
  out, as the reference's code leaves it out (its warning says otherwise);
- as the judge reads a pair, each response loses any reasoning up to its last `</think>`, and a pair whose prompt (its
  Python text, as the reference counts it) and two responses come to more than 10,000 tokens of cl100k_base keeps
  only the prompt's last turn (`max_input_tokens`; None keeps every turn). The preference extractor reads the whole
  prompt and the responses as published, as the reference's `1_get_preference.py` does.
"""

from __future__ import annotations

import functools
import json
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefcraft.components.sensejudge.data import TOPIC_PREFIX
from prefcraft.errors import ConfigError, DataError
from prefcraft.loaders.personal_reward_bench import Message, PreferencePair, read_rows

logger = logging.getLogger(__name__)

FILE_PREFIX = "sense-label"
"""An annotator's file is `sense-label<N>.json`, N from 1 to 3."""
MAX_INPUT_TOKENS = 10_000
REASONING_END = "</think>"
SPEAKERS = {"human": "user", "user": "user", "assistant": "assistant", "gpt": "assistant", "system": "system"}


@dataclass(frozen=True)
class LabelSplit:
    """How human labels become dev and test pairs, and how long a judged input may be: by default the reference's
    values, every topic and every test pair."""

    dev_pairs_per_topic: int = 10
    seed: int = 42
    max_input_tokens: int | None = MAX_INPUT_TOKENS
    """A judged pair over this many tokens keeps only its prompt's last turn; None: never cut."""
    topics: tuple[str, ...] | None = None
    """The topics read (None: all), as the reference's TOPICS."""
    max_test_pairs_per_topic: int | None = None
    """Only the first test pairs of each topic (None: all), as the reference's MAX_SAMPLES caps judged pairs."""


@dataclass(frozen=True)
class HumanLabel:
    topic: str
    judged: PreferencePair
    """The pair as the judge reads it: responses without reasoning, a long input cut to its last turn."""
    written_from: PreferencePair
    """The pair as the preference extractor reads it: the whole prompt and the responses as published."""
    cut: bool


@dataclass
class HumanLabels:
    """One annotator's labels, split into dev and test pairs."""

    path: Path
    annotator: str
    dev: list[HumanLabel]
    test: list[HumanLabel]
    duplicates: int
    """Records dropped as the same pair as an earlier one."""
    small_topics: dict[str, int] = field(default_factory=dict)
    """Topics left out for having fewer records than the dev pairs drawn, with their record count."""

    @property
    def inputs_cut(self) -> int:
        return sum(label.cut for label in (*self.dev, *self.test))


def annotator_file(source: Path, annotator: str | None) -> Path:
    """The file of `annotator` ("2" or "sense-label2") in the folder `source`, or `source` itself when it is a file
    (whose annotator, if named, must be its own)."""
    wanted = None if annotator is None else annotator if annotator.startswith(FILE_PREFIX) else FILE_PREFIX + annotator
    if not source.exists():
        raise DataError(source, None, None, "no such file or folder",
                        f"pass an annotator's {FILE_PREFIX}<N>.json or the folder that holds them")
    if source.is_file():
        if source.suffix != ".json":
            raise DataError(source, None, None, f"expected an annotator's JSON file ({FILE_PREFIX}<N>.json)")
        if wanted is not None and wanted != source.stem and annotator != source.stem:
            raise ConfigError(f"--annotator {annotator} does not match {source}, one annotator's labels",
                              "leave --annotator out, or pass the folder of every annotator's file")
        return source
    files = sorted(path.name for path in source.glob(f"{FILE_PREFIX}*.json"))
    if wanted is None:
        raise ConfigError(f"{source} holds the labels of several annotators ({', '.join(files) or 'none found'})",
                          "choose one with --annotator 1, 2 or 3")
    path = source / f"{wanted}.json"
    if not path.is_file():
        raise ConfigError(f"{source} has no {path.name} (its label files: {', '.join(files) or 'none'})",
                          "choose an annotator whose file is there with --annotator")
    return path


def load_human_labels(
    source: Path, annotator: str | None = None, split: LabelSplit | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> HumanLabels:
    """One annotator's labels (`annotator_file`), de-duplicated and split as the reference does. Raises DataError
    naming the file, row and field of the first record that does not fit. `count_tokens` counts cl100k_base tokens
    (by default tiktoken's, as litellm ships it)."""
    split = split or LabelSplit()
    path = annotator_file(source, annotator)
    records, seen, duplicates = [], set(), 0
    for index, row in enumerate(read_rows(path)):
        record = _parse_record(row, path, index)
        if record.key in seen:
            duplicates += 1
            continue
        seen.add(record.key)
        records.append(record)
    count = count_tokens or _cl100k_tokens
    labels = HumanLabels(path, path.stem, [], [], duplicates)
    for topic, topic_records in _wanted_topics(_by_topic(records), split.topics, path).items():
        if len(topic_records) < split.dev_pairs_per_topic:
            labels.small_topics[topic] = len(topic_records)
            continue
        drawn = random.Random(split.seed).sample(range(len(topic_records)), split.dev_pairs_per_topic)
        labels.dev += [topic_records[index].label(labels.annotator, "train", split, count) for index in drawn]
        labels.test += [record.label(labels.annotator, "test", split, count)
                        for record in _others(topic_records, drawn)[: split.max_test_pairs_per_topic]]
    if labels.small_topics:
        logger.warning("%s: topics with fewer than %d pairs left out, as the reference leaves them out: %s", path,
                       split.dev_pairs_per_topic, ", ".join(f"{t} ({n})" for t, n in labels.small_topics.items()))
    if not labels.dev:
        raise DataError(path, None, None, f"no topic has {split.dev_pairs_per_topic} pairs to draw dev pairs from",
                        "draw fewer with --dev-pairs-per-topic")
    return labels


@dataclass(frozen=True)
class _Record:
    index: int
    prompt: Any
    """As published: the reference counts its Python text."""
    context: tuple[Message, ...]
    topic: str
    chosen: str
    rejected: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What the reference de-duplicates on: the prompt, the topic and the two responses in either order."""
        return (json.dumps(self.prompt, ensure_ascii=False), self.topic, *sorted((self.chosen, self.rejected)))

    def label(self, annotator: str, split: str, label_split: LabelSplit, count_tokens: Callable[[str], int]
              ) -> HumanLabel:
        chosen, rejected = _without_reasoning(self.chosen), _without_reasoning(self.rejected)
        limit = label_split.max_input_tokens
        cut = limit is not None and _longer_than(str(self.prompt) + chosen + rejected, limit, count_tokens)
        conversation_id = f"{annotator}:{self.index}"

        def pair(context: tuple[Message, ...], chosen: str, rejected: str) -> PreferencePair:
            return PreferencePair(user_id=annotator, split=split, context=context, conversation_id=conversation_id,
                                  chosen=Message(role="assistant", content=chosen),
                                  rejected=Message(role="assistant", content=rejected))

        return HumanLabel(self.topic, pair(self.context[-1:] if cut else self.context, chosen, rejected),
                          pair(self.context, self.chosen, self.rejected), cut)


def _parse_record(row: Any, path: Path, index: int) -> _Record:
    if not isinstance(row, dict):
        raise DataError(path, index, None, f"expected an object, got {type(row).__name__}")
    for column in ("prompt", "chosen", "rejected", "dataset"):
        if column not in row:
            raise DataError(path, index, column, "missing", "a record is {prompt, chosen, rejected, dataset}")
    dataset = row["dataset"]
    if not isinstance(dataset, str) or not dataset.startswith(TOPIC_PREFIX):
        raise DataError(path, index, "dataset", f"expected '{TOPIC_PREFIX}<Topic>', got {dataset!r}")
    return _Record(index, row["prompt"], _context(row["prompt"], path, index), dataset.removeprefix(TOPIC_PREFIX),
                   _response(row["chosen"], path, index, "chosen"), _response(row["rejected"], path, index, "rejected"))


def _context(prompt: Any, path: Path, row: int) -> tuple[Message, ...]:
    if isinstance(prompt, str):
        return (Message(role="user", content=prompt),)
    if not isinstance(prompt, list) or not prompt:
        raise DataError(path, row, "prompt", "expected a non-empty list of turns (or the request as a string)")
    return tuple(_turn(turn, path, row, f"prompt[{number}]") for number, turn in enumerate(prompt))


def _turn(turn: Any, path: Path, row: int, where: str) -> Message:
    if not isinstance(turn, dict):
        raise DataError(path, row, where, f"expected a turn {{from, value}}, got {type(turn).__name__}")
    speaker = turn.get("from", turn.get("role"))
    if not isinstance(speaker, str) or speaker.lower() not in SPEAKERS:
        raise DataError(path, row, f"{where}.from", f"expected Human, Assistant or System, got {speaker!r}")
    return Message(role=SPEAKERS[speaker.lower()], content=_text_of(turn, path, row, where))


def _response(response: Any, path: Path, row: int, column: str) -> str:
    if isinstance(response, str):
        return response
    if not isinstance(response, dict):
        raise DataError(path, row, column, f"expected a response {{value}} or text, got {type(response).__name__}")
    return _text_of(response, path, row, column)


def _text_of(holder: dict[str, Any], path: Path, row: int, where: str) -> str:
    """The text under `value` (or `content`): a string, or a list of parts `{"value": str}` joined."""
    key = "value" if "value" in holder else "content"
    if key not in holder:
        raise DataError(path, row, f"{where}.value", "missing: the text (value, or content)")
    text = holder[key]
    if isinstance(text, str):
        return text
    if not isinstance(text, list):
        raise DataError(path, row, f"{where}.{key}", "expected text: a string or a list of parts {value}")
    for number, part in enumerate(text):
        if not isinstance(part, dict) or not isinstance(part.get("value"), str):
            raise DataError(path, row, f"{where}.{key}[{number}].value", "expected a part's text, a string")
    return "".join(part["value"] for part in text)


def _by_topic(records: list[_Record]) -> dict[str, list[_Record]]:
    groups: dict[str, list[_Record]] = {}
    for record in records:
        groups.setdefault(record.topic, []).append(record)
    return groups


def _wanted_topics(
    by_topic: dict[str, list[_Record]], wanted: tuple[str, ...] | None, path: Path
) -> dict[str, list[_Record]]:
    """The records of each wanted topic, topics sorted (a topic's dev draw does not depend on the others)."""
    missing = sorted(set(wanted or ()) - set(by_topic))
    if missing:
        raise ConfigError(f"{path} has no pairs of the topics {', '.join(missing)}",
                          f"its topics: {', '.join(sorted(by_topic))}")
    return {topic: by_topic[topic] for topic in sorted(wanted or by_topic)}


def _others(records: list[_Record], drawn: list[int]) -> list[_Record]:
    """The records not drawn, in file order."""
    dev = set(drawn)
    return [record for index, record in enumerate(records) if index not in dev]


def _without_reasoning(response: str) -> str:
    return response.split(REASONING_END)[-1]


def _longer_than(text: str, limit: int, count_tokens: Callable[[str], int]) -> bool:
    # A token is at least one byte: a text of no more bytes than the limit needs no tokenizer.
    return len(text.encode()) > limit and count_tokens(text) > limit


@functools.cache
def _cl100k() -> Any:
    import litellm  # ships cl100k_base's file, so it loads offline; imported when first needed: it takes seconds

    return litellm.encoding


def _cl100k_tokens(text: str) -> int:
    """cl100k_base tokens of `text`, special tokens' text counted as plain text."""
    return len(_cl100k().encode(text, disallowed_special=()))
