"""`prefcraft settings`: the shared settings, every one with its flag, TOML key, variable and default (`--help`), and
the values in force under a config file, the PREFCRAFT_* variables and the flags given (the command itself)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel

from prefcraft.flags import ROLES, SETTING_KEYS
from prefcraft.settings import Settings

HELP = ("the shared settings of every step: --help lists each flag with its TOML key, variable and default; without "
        "--help, the values in force")
DESCRIPTION = """The settings every step, `tour`, `experiment run` and `sweep run` share: which models play which
role, the server prefcraft starts, threads, seed, MLflow tracking, the cache. Each is set, lowest first, by its default,
the --config file (a TOML key), a PREFCRAFT_* environment variable (nested keys joined by a double underscore) and the
flag. Run without --help, the command prints the values in force, one TOML key a line."""


def add_steps(parser: argparse.ArgumentParser, add_settings_flags: Callable[..., None]) -> None:
    flagless = [f"{key} (default: {_shown(default)})" for key, default in _defaults(Settings)
                if key not in SETTING_KEYS.values() and key not in ROLES]
    parser.usage = "%(prog)s [shared settings]"
    parser.description = DESCRIPTION
    parser.epilog = (f"Settings without a flag, set in the --config file or a variable: {', '.join(flagless)}; "
                     "prompt.* and judge.*: each key of task.* (default: the task model's).")
    add_settings_flags(parser, listed=True)


def run(args: argparse.Namespace, settings: Settings, echo: Callable[[str], None]) -> Settings:
    """Prints the settings in force; returns them."""
    for key, value in _values(settings):
        echo(f"{key} = {_shown(value)}")
    return settings


def _defaults(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, default) of every setting of `model`, the tables' keys one by one."""
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield from _defaults(field.annotation, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", field.get_default(call_default_factory=True)


def _values(settings: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every setting in force, the tables' keys one by one."""
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, BaseModel):
            yield from _values(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def _shown(value: Any) -> str:
    return "unset" if value is None else str(value)
