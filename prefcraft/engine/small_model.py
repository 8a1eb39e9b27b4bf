"""The small-model profile's per-field bounds, each declared beside the field it bounds.

A signature module declares, after its classes, the bounds that only a tiny model needs for some of their fields:

    small_model_bounds(InferPreference, chars={"analysis": 300, "preference": 200})

`chars` bounds the characters of every string inside a field, `items` the entries of every list or map inside it, as
the profile's `field_chars` and `field_items` do (`SmallModelProfile`, keyed `Owner.field`). A declaration is checked
at once: each name must be an output field of the signature, or a field of the pydantic model. The signature itself
stays the paper's: its docstring, fields and schema carry no such bound, and with the profile off none applies.

The adapter reads the declarations when it builds a call's schema (a signature is imported before it is called), under
the entries a user gives in the profile, which are added to them or replace them. This module sits in the core, below
the signatures: it never imports them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Literal, get_args

import dspy
import pydantic

from prefcraft.errors import ConfigError

if TYPE_CHECKING:
    from prefcraft.settings import SmallModelProfile

Kind = Literal["field_chars", "field_items"]
KINDS: tuple[Kind, ...] = get_args(Kind)
CHAIN_OF_THOUGHT_FIELD = "reasoning"  # the output field dspy.ChainOfThought adds to any signature

_DECLARED: dict[Kind, dict[str, int]] = {kind: {} for kind in KINDS}


def small_model_bounds(
    owner: type, *, chars: Mapping[str, int] | None = None, items: Mapping[str, int] | None = None
) -> None:
    """Declares the small-model profile's bounds of `owner`'s fields, by field name: `chars`, the characters of each
    string inside the field; `items`, the entries of each list or map inside it. `owner` is a signature (its output
    fields) or a pydantic model of a structured output (its fields)."""
    fields = _fields(owner)
    given: dict[Kind, Mapping[str, int]] = {"field_chars": chars or {}, "field_items": items or {}}
    for kind, bounds in given.items():
        for name, bound in bounds.items():
            key = f"{owner.__name__}.{name}"
            if name not in fields:
                raise ValueError(
                    f"small-model bound {key}: {owner.__name__} ({owner.__module__}) has no field {name!r}; "
                    f"name one of its {_describe(owner)}: {', '.join(sorted(fields))}"
                )
            if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
                raise ValueError(f"small-model bound {key}: {bound!r} is not a positive whole number")
            declared = _DECLARED[kind].get(key, bound)
            if declared != bound:
                raise ValueError(
                    f"small-model bound {key} ({kind}) is declared twice, as {declared} and as {bound}: two owners "
                    "share a name, or a module declares one field twice; keep one declaration"
                )
    for kind, bounds in given.items():
        _DECLARED[kind].update({f"{owner.__name__}.{name}": bound for name, bound in bounds.items()})


def declared(kind: Kind) -> dict[str, int]:
    """A copy of the bounds of one kind declared so far, keyed `Owner.field`."""
    return dict(_DECLARED[kind])


class FieldBounds(Mapping[str, int]):
    """The per-field bounds of one kind (`field_chars` or `field_items`) with the profile on: the user's entries over
    the declared bounds. The declarations are read at each lookup, so that a signature imported after the adapter was
    built gets its bounds all the same."""

    def __init__(self, kind: Kind, entries: Mapping[str, int] | None = None):
        self.kind = kind
        self.entries = dict(entries or {})

    def __getitem__(self, key: str) -> int:
        return self.entries[key] if key in self.entries else _DECLARED[self.kind][key]

    def __iter__(self) -> Iterator[str]:
        return iter({**_DECLARED[self.kind], **self.entries})

    def __len__(self) -> int:
        return len(_DECLARED[self.kind].keys() | self.entries.keys())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind!r}, {dict(self)!r})"


def field_bounds(profile: SmallModelProfile) -> tuple[FieldBounds, FieldBounds]:
    """The characters and the items of each field under `profile`: its `field_chars` and `field_items` over the
    declared bounds. An entry that names a loaded signature or model but none of its fields is refused here, before
    any call; one whose owner is not imported yet cannot be checked."""
    given: dict[Kind, Mapping[str, int]] = {"field_chars": profile.field_chars, "field_items": profile.field_items}
    owners = _loaded_owners() if any(given.values()) else {}
    for kind, entries in given.items():
        _check_entries(kind, entries, owners)
    return FieldBounds("field_chars", profile.field_chars), FieldBounds("field_items", profile.field_items)


def _check_entries(kind: Kind, entries: Mapping[str, int], owners: Mapping[str, list[type]]) -> None:
    for key in entries:
        name, _, field = key.partition(".")
        fields = set().union(*(_fields(owner) for owner in owners.get(name, [])))
        if owners.get(name) and field not in fields:
            raise ConfigError(
                f"small_model.{kind} names {key}, but {name} has no field {field!r}",
                f"name one of its fields ({', '.join(sorted(fields))}), keyed {name}.FIELD",
            )


def _loaded_owners() -> dict[str, list[type]]:
    """The signatures and pydantic models imported so far, by class name."""
    owners: dict[str, list[type]] = {}
    for cls in _subclasses(pydantic.BaseModel):
        owners.setdefault(cls.__name__, []).append(cls)
    return owners


def _subclasses(cls: type) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]


def _fields(owner: type) -> set[str]:
    """The fields a bound of `owner` may name: a signature's output fields, with the reasoning ChainOfThought adds (the
    adapter bounds it under the signature's name), or a pydantic model's fields."""
    if isinstance(owner, type) and issubclass(owner, dspy.Signature):
        return {*owner.output_fields, CHAIN_OF_THOUGHT_FIELD}
    if isinstance(owner, type) and issubclass(owner, pydantic.BaseModel):
        return set(owner.model_fields)
    raise TypeError(f"small-model bounds belong to a dspy.Signature or a pydantic model, not {owner!r}")


def _describe(owner: type) -> str:
    return "output fields" if issubclass(owner, dspy.Signature) else "fields"
