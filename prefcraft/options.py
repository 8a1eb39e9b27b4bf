"""A step's options as one typed model (its job type): the command line's flags are made from it, and experiment files,
sweep files and `prefcraft.run` are checked against it. A field is a flag: `max_instances` is `--max-instances`, its
description the flag's help, its default the flag's, its type and bounds the values it takes.
"""

from __future__ import annotations

import argparse
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]
FilePath = Annotated[Path, Field(strict=False)]
"""A path: TOML and Python give it as a string."""
T = TypeVar("T")
OneOrMore = Annotated[list[T], Field(min_length=1)]
"""One or more values (`nargs="+"`); a plain list takes none too (`nargs="*"`)."""


class Options(BaseModel):
    """A step's options. Strict: a file says what it means, so "3" is no int and 1 is no bool."""

    model_config = ConfigDict(extra="forbid", strict=True)


def option(default: Any, help: str, *, flag: str | None = None, group: str | None = None,
           metavar: str | None = None) -> Any:
    """A field of an Options model with its flag's help; `flag` names a switch whose name differs from the field's
    (`--no-shipped` for `use_shipped`), `group` the help section it is listed under. `...` as default: required."""
    extra = {key: value for key, value in (("flag", flag), ("group", group), ("metavar", metavar)) if value}
    return Field(default, description=help, json_schema_extra=extra or None)


def add_option_flags(parser: argparse.ArgumentParser, options: type[Options]) -> None:
    """A flag per field of `options`, in the fields' order; the fields of one group under one heading."""
    groups: dict[str, Any] = {}
    for name, field in options.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        target = parser
        if extra.get("group"):
            target = groups.setdefault(extra["group"], parser.add_argument_group(extra["group"]))
        target.add_argument(extra.get("flag") or f"--{name.replace('_', '-')}", dest=name,
                            **_flag_spec(name, field, extra))


def options_from_args(options: type[Options], args: argparse.Namespace) -> Options:
    """The options a parsed command line gives (argparse has checked each value)."""
    return options.model_validate({name: getattr(args, name) for name in options.model_fields})


def check_options(options: type[Options], given: dict[str, Any], key: tuple[str, ...], command: str,
                  problems: list[str], settings_names: frozenset[str] = frozenset()) -> Options | None:
    """`given` validated as `options`; or None, their problems (named under `key`) added to `problems`.
    `settings_names`: names that are settings, not options, for a clearer message."""
    try:
        return options.model_validate(given)
    except ValidationError as error:
        problems += [format_problem(issue, key, command, settings_names) for issue in error.errors()]
        return None


def format_problem(issue: Any, prefix: tuple[str, ...] = (), command: str | None = None,
                   settings_names: frozenset[str] = frozenset()) -> str:
    loc = (*prefix, *issue["loc"])
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    if issue["type"] == "extra_forbidden" and command and loc[-1] in settings_names:
        return f"{key}: a settings flag, not an option of {command}: set it in the [settings] tables"
    if issue["type"] == "extra_forbidden":
        return f"{key}: unknown option of {command}" if command else f"{key}: unknown key"
    if issue["type"] == "missing":
        return f"{key}: required option of {command} is missing" if command else f"{key}: missing"
    return f"{key}: {issue['msg']}"


def _flag_spec(name: str, field: FieldInfo, extra: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"help": field.description}
    if extra.get("metavar"):
        spec["metavar"] = extra["metavar"]
    if field.is_required():
        spec["required"] = True
    else:
        spec["default"] = field.default
    annotation, metadata = _unwrap(field.annotation, list(field.metadata))
    if annotation is bool:
        spec["action"] = "store_false" if field.default is True else "store_true"
        if field.default is True and not extra.get("flag"):
            raise TypeError(f"{name}: a switch that is on by default needs a flag that turns it off")
        return spec
    if get_origin(annotation) is list:
        spec["nargs"] = "+" if any(isinstance(item, annotated_types.MinLen) and item.min_length
                                   for item in metadata) else "*"
        annotation, metadata = _unwrap(get_args(annotation)[0], [])
    if get_origin(annotation) is Literal:
        spec["choices"] = get_args(annotation)
    elif annotation in (int, float):
        spec["type"] = Bounded(annotation, ge=_bound(metadata, annotated_types.Ge, "ge"),
                               le=_bound(metadata, annotated_types.Le, "le"))
    elif annotation is Path:
        spec["type"] = Path
    elif annotation is not str:
        raise TypeError(f"{name}: no flag for options of type {annotation}")
    return spec


def _unwrap(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    """The type under `X | None` and `Annotated[X, ...]`, with the constraints found on the way."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation, *more = get_args(annotation)
            metadata += [item for extra in more for item in (extra.metadata if isinstance(extra, FieldInfo)
                                                              else [extra])]
        elif get_origin(annotation) in (Union, types.UnionType):
            annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
        else:
            return annotation, metadata


def _bound(metadata: list[Any], kind: type, name: str) -> float | None:
    return next((getattr(item, name) for item in metadata if isinstance(item, kind)), None)


@dataclass(frozen=True)
class Bounded:
    """A number flag's type with its bounds, so argparse rejects what the model would."""

    kind: type[int] | type[float]
    ge: float | None = None
    le: float | None = None

    @property
    def __name__(self) -> str:  # argparse names the type in "invalid int value: 'x'"
        return self.kind.__name__

    def __call__(self, text: str) -> int | float:
        value = self.kind(text)
        if (self.ge is not None and value < self.ge) or (self.le is not None and value > self.le):
            bound = (f"at least {self.ge}" if self.le is None else f"at most {self.le}" if self.ge is None
                     else f"between {self.ge} and {self.le}")
            raise argparse.ArgumentTypeError(f"{value} is not {bound}")
        return value
