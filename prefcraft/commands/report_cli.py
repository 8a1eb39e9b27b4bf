"""`prefcraft report`: one self-contained HTML page of the runs in an MLflow store (issue 20).

It reads the store the other commands logged to (the same `--tracking-uri`, `--mlflow-experiment` and `--config`
settings) and calls no model.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefcraft.options import Bounded, add_renamed_flag

HELP = "write one self-contained HTML page (tables and figures) of the runs in an MLflow store"
DEFAULT_OUTPUT = Path("runs/report.html")
DEFAULT_RUNS = 50


def add_steps(parser: argparse.ArgumentParser, add_settings_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    """No steps, and of the settings only where the store is: the report starts no server and calls no model."""
    parser.add_argument("--config", type=Path,
                        help="TOML settings file (its tracking_uri and experiment) (default: none)")
    parser.add_argument("--tracking-uri", help="MLflow tracking URI (default: sqlite:///mlflow.db)")
    parser.add_argument("--mlflow-experiment", dest="experiment", metavar="NAME",
                        help="MLflow experiment name (default: prefcraft)")
    add_renamed_flag(parser, "--experiment", "--mlflow-experiment")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the page to write")
    parser.add_argument("--runs", type=Bounded(int, ge=1), default=DEFAULT_RUNS,
                        help="the N most recent top-level runs, with everything under them")
    parser.add_argument("--mlflow-ui", metavar="URL",
                        help="the MLflow UI the compiled programs link to (default: the tracking server, or "
                        "http://127.0.0.1:5000 where `mlflow ui` listens over a local store)")


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Path:
    """Writes the report; returns its path."""
    from prefcraft.html_report import write_report

    path = write_report(settings.tracking_uri, settings.experiment, args.output, args.runs, args.mlflow_ui)
    echo(f"report of experiment {settings.experiment} ({settings.tracking_uri}) written to {path}")
    return path
