"""CUPID instances (seeds/001) from the Hugging Face hub (`kixlab/CUPID`, `kixlab/CUPID-Unverified`) or local files.

One row is one instance: `persona_id`, `instance_type` (consistent / contrastive / changing), `current_request`,
`current_context_factor`, `current_contextual_preference`, `current_checklist` (at most 4 yes/no criteria) and
`prior_interactions`, a chronological list of sessions `{context_factor, contextual_preference, dialogue}` whose
dialogue is a list of `{role, content}` turns. Every other column is ignored. Only the dialogues and the current
request are model inputs; the context factors, the sessions' preferences and the current preference and checklist are
gold and stay out of `CupidInstance.inputs()`.

A row that breaks the schema raises DataError naming the file, row and field; with `skip_invalid=True` it is skipped
instead, and the errors are returned so that a command can count and report them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import dspy
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import Message, format_conversation, read_rows

HUB_DATASETS = ("kixlab/CUPID", "kixlab/CUPID-Unverified")
HUB_SPLIT = "test"  # the only split both hub datasets publish; local files ignore it
SAMPLE_INSTANCES = Path(__file__).resolve().parent / "sample" / "cupid_sample.jsonl"
MAX_CHECKLIST_ITEMS = 4
INSTANCE_TYPES = ("consistent", "contrastive", "changing")
InstanceType = Literal["consistent", "contrastive", "changing"]
INFERRER_INPUTS = ("sessions", "current_request")


class Session(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    context_factor: str
    contextual_preference: str
    dialogue: tuple[Message, ...] = Field(min_length=1)


class CupidInstance(BaseModel):
    """One CUPID instance. `instance_id` is `<persona_id>/<instance_type>/<row>`: the hub data has no id column."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str
    persona_id: str
    instance_type: InstanceType
    current_request: str = Field(min_length=1)
    current_context_factor: str
    current_contextual_preference: str = Field(min_length=1)
    current_checklist: tuple[str, ...] = Field(min_length=1, max_length=MAX_CHECKLIST_ITEMS)
    prior_interactions: tuple[Session, ...] = Field(min_length=1)

    def oracle_interactions(self) -> tuple[Session, ...]:
        """The prior sessions that share the current contextual preference (the paper's oracle setting)."""
        return tuple(session for session in self.prior_interactions
                     if session.contextual_preference == self.current_contextual_preference)

    def sessions(self, oracle: bool = False) -> list[str]:
        """Each prior session's dialogue as text, in chronological order: the only view of the history models get.
        `oracle`: only `oracle_interactions()`."""
        chosen = self.oracle_interactions() if oracle else self.prior_interactions
        return [format_conversation(session.dialogue) for session in chosen]

    def example(self, oracle: bool = False) -> dspy.Example:
        """A dspy.Example whose inputs are the dialogues (`oracle`: only those that share the current preference) and
        the request; the gold preference and checklist ride along as labels for metrics."""
        return dspy.Example(
            instance_id=self.instance_id, instance_type=self.instance_type, sessions=self.sessions(oracle),
            current_request=self.current_request, gold_preference=self.current_contextual_preference,
            gold_checklist=list(self.current_checklist),
        ).with_inputs(*INFERRER_INPUTS)


@dataclass(frozen=True)
class LoadedInstances:
    instances: list[CupidInstance]
    skipped: list[DataError]
    """Rows left out with `skip_invalid=True`, each with the error that names its row and field."""


@dataclass(frozen=True)
class PersonaSplit:
    train: list[CupidInstance]
    val: list[CupidInstance]
    test: list[CupidInstance]


def load_instances(source: str | Path = SAMPLE_INSTANCES, *, skip_invalid: bool = False) -> LoadedInstances:
    """Every instance of a .json/.jsonl/.parquet file or a hub dataset (its test split).

    Raises DataError (file, row, field) for the first invalid row, or skips and returns it when `skip_invalid`. A file
    that cannot be read at all (missing, not UTF-8, not JSON) always raises.
    """
    instances, skipped = [], []
    for index, row in enumerate(read_rows(source, hub_split=HUB_SPLIT)):
        try:
            instances.append(_parse_row(row, str(source), index))
        except DataError as error:
            if not skip_invalid:
                raise
            skipped.append(error)
    if not instances:
        raise DataError(source, None, None, "no valid instances",
                        "check the file's schema (see prefcraft/components/cupid/sample)")
    return LoadedInstances(instances, skipped)


def split_by_persona(
    instances: Sequence[CupidInstance], *, val_personas: int, test_personas: int, seed: int = 0,
    source: str | Path | None = None,
) -> PersonaSplit:
    """Train / val / test by persona, so that no persona's sessions are seen in training and again in testing. The
    personas are shuffled with `seed`; test takes the first `test_personas`, val the next, train the rest. Too few
    personas for the split is a DataError naming `source` (the file the instances came from) and the flags to lower."""
    personas = sorted({instance.persona_id for instance in instances})
    if val_personas + test_personas >= len(personas):
        raise DataError(source or "the instances", None, "persona_id",
                        f"its {len(personas)} persona(s) cannot give {test_personas} test and {val_personas} "
                        "validation personas and leave one for training", _split_hint(len(personas)))
    random.Random(seed).shuffle(personas)
    test, val = set(personas[:test_personas]), set(personas[test_personas:test_personas + val_personas])
    return PersonaSplit(
        train=[i for i in instances if i.persona_id not in test | val],
        val=[i for i in instances if i.persona_id in val],
        test=[i for i in instances if i.persona_id in test],
    )


def _split_hint(personas: int) -> str:
    every = "or evaluate every instance with --split all"
    if personas < 2:
        return f"a split needs two personas or more: give a file with more personas, {every}"
    fitting = "--test-personas 1 --val-personas " + ("1" if personas > 2 else "0")
    return (f"lower --test-personas and --val-personas (test_personas, val_personas in an experiment file) to a sum "
            f"below {personas}, e.g. {fitting}; {every}")


def _parse_row(row: Any, source: str, index: int) -> CupidInstance:
    if not isinstance(row, dict):
        raise DataError(source, index, None, f"expected an object, got {type(row).__name__}")
    for column in CupidInstance.model_fields:
        if column != "instance_id" and column not in row:
            raise DataError(source, index, column, "missing column",
                            f"CUPID rows need {', '.join(f for f in CupidInstance.model_fields if f != 'instance_id')}")
    instance_id = f"{row['persona_id']}/{row['instance_type']}/{index}"
    try:
        return CupidInstance.model_validate({**row, "instance_id": instance_id})
    except ValidationError as error:
        issue = error.errors()[0]
        location = _location(issue["loc"])
        raise DataError(source, index, location, _problem(location, issue["msg"])) from None


def _location(parts: tuple[int | str, ...]) -> str:
    """A pydantic location such as ('prior_interactions', 2, 'dialogue', 0, 'content') as
    `prior_interactions[2].dialogue[0].content`."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _problem(location: str, message: str) -> str:
    if location == "current_checklist" and "at most" in message:
        return f"a checklist has at most {MAX_CHECKLIST_ITEMS} items ({message})"
    if location == "prior_interactions" and "at least" in message:
        return "the instance has no prior sessions, so there is nothing to infer a preference from"
    if location.endswith(".dialogue") and "at least" in message:
        return "the session's dialogue is empty"
    return message
