"""A step's options as one typed model (its job type): the command line's flags are made from it, and experiment files,
sweep files and `prefcraft.run` are checked against it. A field is a flag: `max_instances` is `--max-instances`, its
description the flag's help, its default the flag's, its type and bounds the values it takes. A file and `prefcraft.run`
name an option by its flag, `-` written `_`: a switch that is on by default is turned off by its own flag's name
(`no_shipped = true` is `--no-shipped`, the field `use_shipped` false).
"""

from __future__ import annotations

import argparse
import logging
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

logger = logging.getLogger(__name__)

Split = Literal["train", "val", "test"]
"""A data split, by the same three names in every component (LaMP-QA's hub calls the second `validation`)."""
SplitOrAll = Literal[Split, "all"]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]
FilePath = Annotated[Path, Field(strict=False)]
"""A path: TOML and Python give it as a string."""
T = TypeVar("T")
OneOrMore = Annotated[list[T], Field(min_length=1)]
"""One or more values (`nargs="+"`); a plain list takes none too (`nargs="*"`)."""


class Options(BaseModel):
    """A step's options. Strict: a file says what it means, so "3" is no int and 1 is no bool. `renamed_options`: the
    names options had before (old: new), taken for one release as flags, in files and in `prefcraft.run`, with a
    warning naming the new one."""

    model_config = ConfigDict(extra="forbid", strict=True)
    renamed_options: ClassVar[dict[str, str]] = {}

    @classmethod
    def former_names(cls) -> dict[str, str]:
        """The `renamed_options` of this class and of every class it derives from (old: new), a class's own over its
        bases'."""
        return {old: new for klass in reversed(cls.__mro__)
                for old, new in vars(klass).get("renamed_options", {}).items()}

    @model_validator(mode="before")
    @classmethod
    def _former_names(cls, given: Any) -> Any:
        """An option or a value given by its former name is taken under its new one, with a warning."""
        if not isinstance(given, dict):
            return given
        given = under_current_names(given, cls.former_names(), "option")
        for name, value in list(given.items()):
            if renamed := renamed_values(cls, name):
                given[name] = ([_new_value(renamed, item) for item in value] if isinstance(value, list)
                               else _new_value(renamed, value))
        return given

    @model_validator(mode="before")
    @classmethod
    def _switches_by_their_flags(cls, given: Any) -> Any:
        """A switch given by its flag's name (`no_shipped`) sets its field to the opposite; its field's own name
        (`use_shipped`) still works for one release, with a warning naming the flag's."""
        if not isinstance(given, dict):
            return given
        given = dict(given)
        for name, key in switch_keys(cls).items():
            if key in given:
                value = given.pop(key)
                given[name] = not value if isinstance(value, bool) else value
            elif name in given:
                logger.warning("option %s is now %s (%s = %s); %s goes in the next release", name, key, key,
                               _toml(not given[name]) if isinstance(given[name], bool) else "true or false", name)
        return given


class SampleSource(Options):
    """A step that reads `data` (`--data`) when given, else its component's bundled `sample`; a step without `--data`
    (a demo) reads the sample."""

    sample: ClassVar[Path]

    @property
    def source(self) -> str | Path:
        return getattr(self, "data", None) or self.sample


def option(default: Any, help: str, *, flag: str | None = None, group: str | None = None,
           metavar: str | None = None, renamed: dict[str, str] | None = None) -> Any:
    """A field of an Options model with its flag's help; `flag` names the flag that turns off a switch on by default
    (`--no-shipped` for `use_shipped`; files and `prefcraft.run` give it as `no_shipped`), `group` the help section it
    is listed under, `renamed` the values it took before under other names (old: new), refused naming the new one.
    `...` as default: required."""
    given = (("flag", flag), ("group", group), ("metavar", metavar), ("renamed", renamed))
    extra = {key: value for key, value in given if value}
    return Field(default, description=help, json_schema_extra=extra or None)


def switch_keys(options: type[Options]) -> dict[str, str]:
    """The switches whose flag turns them off, as field: the flag's name as a key (`use_shipped`: `no_shipped`)."""
    keys = {}
    for name, field in options.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("flag"):
            keys[name] = option_key(extra["flag"])
    return keys


def value_under(options: Options, key: str) -> Any:
    """An option's value under the key a file or `prefcraft.run` gives it: a switch's flag name (`no_shipped`) holds
    the opposite of its field (`use_shipped`)."""
    switched = {flag_key: name for name, flag_key in switch_keys(type(options)).items()}
    return not getattr(options, switched[key]) if key in switched else getattr(options, key)


def option_key(flag: str) -> str:
    """The key a file and `prefcraft.run` give a flag's value under: `--no-shipped` is `no_shipped`."""
    return flag.removeprefix("--").replace("-", "_")


def _toml(value: bool) -> str:
    return "true" if value else "false"


def under_current_names(given: dict[str, Any], renamed: dict[str, str], kind: str) -> dict[str, Any]:
    """A copy of `given` with each key that is a former name (`renamed`, old: new) under its new one, with a warning
    naming the `kind` of key ("option", "setting"); a key given under both names keeps the new one's value."""
    given = dict(given)
    for old, new in renamed.items():
        if old in given:
            logger.warning("%s %s is now %s; %s goes in the next release", kind, old, new, old)
            given.setdefault(new, given.pop(old))
    return given


def renamed_values(options: type[Options], name: str) -> dict[str, str]:
    """The former names of option `name`'s values (old: new); empty for an option whose values kept theirs."""
    field = options.model_fields.get(name)
    extra = field.json_schema_extra if field is not None and isinstance(field.json_schema_extra, dict) else {}
    return extra.get("renamed", {})


def _new_value(renamed: dict[str, str], value: Any) -> Any:
    if isinstance(value, str) and value in renamed:
        logger.warning("'%s' is now '%s'; '%s' goes in the next release", value, renamed[value], value)
        return renamed[value]
    return value


@dataclass(eq=False)  # hashable (argparse looks types up in a dict), though it holds a dict
class RenamedValues:
    """A flag's type that takes a value's former name as its new one, with a warning, and passes every other value
    on."""

    renamed: dict[str, str]

    def __call__(self, value: str) -> str:
        return _new_value(self.renamed, value)


def add_option_flags(parser: argparse.ArgumentParser, options: type[Options]) -> None:
    """A flag per field of `options`, the required ones first, then in the fields' order; the fields of one group under
    one heading."""
    groups: dict[str, Any] = {}
    fields = sorted(options.model_fields.items(), key=lambda item: not item[1].is_required())
    for name, field in fields:
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        target = parser
        if extra.get("group"):
            target = groups.setdefault(extra["group"], parser.add_argument_group(extra["group"]))
        flag = extra.get("flag") or as_flag(name)
        target.add_argument(flag, dest=option_key(flag), **_flag_spec(name, field, extra))
    for old, new in options.former_names().items():
        add_renamed_flag(parser, as_flag(old), as_flag(new))


def as_flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


class Renamed(argparse.Action):
    """A flag's former spelling: taken as the flag it is now (`new`), with a warning naming it, for one release."""

    def __init__(self, option_strings: list[str], dest: str, new: argparse.Action, **kwargs: Any):
        super().__init__(option_strings, new.dest, nargs=new.nargs, const=new.const, type=new.type,
                         choices=new.choices, metavar=new.metavar, help=argparse.SUPPRESS, default=argparse.SUPPRESS)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: str | None = None):
        flag = self.new.option_strings[0]
        logger.warning("%s is now %s; %s goes in the next release", option, flag, option)
        self.new(parser, namespace, values, flag)


def add_renamed_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, old: str, new: str) -> None:
    """`old`, the former spelling of the flag `new` that `parser` has."""
    target = next(action for action in parser._actions if new in action.option_strings)
    parser.add_argument(old, action=Renamed, new=target)


def options_from_args(options: type[Options], args: argparse.Namespace) -> Options:
    """The options a parsed command line gives (argparse has checked each value), a switch under its flag's name."""
    keys = switch_keys(options)
    return options.model_validate({keys.get(name, name): getattr(args, keys.get(name, name))
                                   for name in options.model_fields})


def check_options(options: type[Options], given: dict[str, Any], key: tuple[str, ...], command: str,
                  problems: list[str], settings_names: frozenset[str] = frozenset()) -> Options | None:
    """`given` validated as `options`; or None, their problems (named under `key`) added to `problems`.
    `settings_names`: names that are settings, not options, for a clearer message."""
    try:
        return options.model_validate(given)
    except ValidationError as error:
        written = {name: key for name, key in switch_keys(options).items() if key in given}  # as the caller named it
        written |= {new: old for old, new in options.former_names().items() if old in given}
        for issue in error.errors():
            name = str(issue["loc"][0]) if issue["loc"] else ""
            loc = (written[name], *issue["loc"][1:]) if name in written else issue["loc"]
            problems.append(format_problem({**issue, "loc": loc}, key, command, settings_names))
        return None


def format_problem(issue: Any, prefix: tuple[str, ...] = (), command: str | None = None,
                   settings_names: frozenset[str] = frozenset()) -> str:
    loc = (*prefix, *issue["loc"])
    key = problem_key(loc)
    if issue["type"] == "extra_forbidden" and command and loc[-1] in settings_names:
        return f"{key}: a settings flag, not an option of {command}: set it in the [settings] tables"
    if issue["type"] == "extra_forbidden":
        return f"{key}: unknown option of {command}" if command else f"{key}: unknown key"
    if issue["type"] == "missing":
        return f"{key}: required option of {command} is missing" if command else f"{key}: missing"
    return f"{key}: {issue['msg']}"


def problem_key(loc: tuple[Any, ...]) -> str:
    """Where a problem is, as a file names it: `steps.evaluate.variants[1]`."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _flag_spec(name: str, field: FieldInfo, extra: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"help": field.description}
    if extra.get("metavar"):
        spec["metavar"] = extra["metavar"]
    if field.is_required():
        spec["required"] = True
    else:
        spec["default"] = field.default
    annotation, metadata = unwrap(field.annotation, list(field.metadata))
    if extra.get("flag") and not (annotation is bool and field.default is True):
        raise TypeError(f"{name}: only a switch on by default takes a flag of its own, the one that turns it off")
    if annotation is bool:
        if field.default is True and not extra.get("flag"):
            raise TypeError(f"{name}: a switch that is on by default needs a flag that turns it off")
        # A switch on by default is stored under its flag's name, off until given (`switch_keys`).
        spec.update(action="store_true", default=False)
        return spec
    if get_origin(annotation) is list:
        spec["nargs"] = "+" if any(isinstance(item, annotated_types.MinLen) and item.min_length
                                   for item in metadata) else "*"
        annotation, metadata = unwrap(get_args(annotation)[0], [])
    if get_origin(annotation) is Literal:
        spec["choices"] = get_args(annotation)
        if extra.get("renamed"):
            spec["type"] = RenamedValues(extra["renamed"])
    elif annotation in (int, float):
        spec["type"] = Bounded(annotation, ge=_bound(metadata, annotated_types.Ge, "ge"),
                               le=_bound(metadata, annotated_types.Le, "le"))
        spec.setdefault("metavar", "N" if annotation is int else "X")
    elif annotation is Path:
        spec["type"] = Path
        spec.setdefault("metavar", "PATH")
    elif annotation is not str:
        raise TypeError(f"{name}: no flag for options of type {annotation}")
    elif extra.get("renamed"):
        spec["type"] = RenamedValues(extra["renamed"])
    return spec


def unwrap(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
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
