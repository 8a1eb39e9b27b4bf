"""`prefcraft cupid`: the CUPID component's command line (being built: issue 17)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from prefcraft.errors import ConfigError

HELP = "CUPID (not built yet)"


def add_steps(parser: argparse.ArgumentParser, add_settings_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    add_settings_flags(parser)


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> None:
    raise ConfigError("the CUPID component is not built yet")
