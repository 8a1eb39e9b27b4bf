"""`prefcraft report`: one self-contained HTML page of the runs in an MLflow store (issue 20).

It reads the store the other commands logged to (the same `--tracking-uri`, `--mlflow-experiment` and `--config`
settings) and calls no model.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefcraft.flags import add_some_settings_flags
from prefcraft.options import Bounded

HELP = "write one self-contained HTML page (tables and figures) of the runs in an MLflow store"
DEFAULT_OUTPUT = Path("runs/report.html")
DEFAULT_RUNS = 50


def add_steps(parser: argparse.ArgumentParser, add_settings_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    """No steps, and of the settings only where the store is: the report starts no server and calls no model."""
    add_some_settings_flags(parser, "tracking settings", lambda key: key in ("tracking_uri", "mlflow_experiment"))
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the page to write")
    parser.add_argument("--runs", type=Bounded(int, ge=1), default=DEFAULT_RUNS,
                        help="the N most recent top-level runs, with everything under them")
    parser.add_argument("--mlflow-ui", metavar="URL",
                        help="the MLflow UI the compiled programs link to (default: the tracking server, or "
                        "http://127.0.0.1:5000 where `mlflow ui` listens over a local store)")


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Path:
    """Writes the report; returns its path."""
    from prefcraft.html_report import write_report

    path = write_report(settings.tracking_uri, settings.mlflow_experiment, args.output, args.runs, args.mlflow_ui)
    echo(f"report of experiment {settings.mlflow_experiment} ({settings.tracking_uri}) written to {path}")
    return path
