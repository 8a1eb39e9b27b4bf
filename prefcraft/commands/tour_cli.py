"""`prefcraft tour`: the main job (`make demo`), every component's demo on the embedded model and one summary table."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefcraft.registry import COMPONENTS

HELP = "the main job: every component's demo on the embedded model, then one summary table"
# The demos' own per-call timeout for a loaded 2-core machine; the parts run on the tour's settings, not their own.
DEFAULTS = {"task_timeout_s": 600.0}


def add_steps(parser: argparse.ArgumentParser, add_settings_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    add_settings_flags(parser)
    parser.set_defaults(**DEFAULTS)
    parser.add_argument("--components", nargs="+", choices=list(COMPONENTS), default=list(COMPONENTS),
                        help="which demos to run, in the tour's order (default: all five)")
    parser.add_argument("--sensebench", type=Path,
                        help="SenseBench's new_sense_bmk.json or its folder, for SenseJudge (not shipped: no licence "
                        "upstream) (default: none, and SenseJudge is skipped)")


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Any:
    """Runs the tour; returns its table's rows."""
    from prefcraft.commands.tour import run_tour  # the components' code: not loaded by `--help`

    return run_tour(settings, args.components, args.sensebench, echo)
