"""`prefcraft sweep`: an Optuna study over a compile step's settings (`run`), or only validate sweep files (`check`).

A sweep file names a compile step, its fixed options, the settings, the search space and the study
(prefcraft/experiments/sweeps.py; experiments/sweeps/ holds examples).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefcraft.commands.experiment_cli import check_files
from prefcraft.flags import settings_overrides

HELP = ("sweeps: an Optuna study over a compile step's settings, resumable, with its Pareto front (run), or validate "
        "files (check)")


def add_steps(parser: argparse.ArgumentParser, add_settings_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    steps = parser.add_subparsers(dest="step", required=True)
    run_parser = steps.add_parser("run", help="run the trials the study still lacks, each a nested MLflow run under "
                                  "sweep:<name>; report the Pareto front")
    run_parser.add_argument("file", type=Path, metavar="SWEEP.toml", help="the sweep file to run (or resume)")
    add_settings_flags(run_parser)  # over the file's [settings]; a searched temperature is over them both
    check_parser = steps.add_parser("check", help="validate sweep files against the step's options; runs nothing")
    check_parser.add_argument("files", type=Path, nargs="+", metavar="SWEEP.toml", help="sweep files to validate")
    check_parser.set_defaults(config=None)  # main() reads --config before any command; check takes no settings


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Any:
    """Runs the sweep (returns its SweepOutcome) or checks the files (returns the sweeps). `settings` is not used: a
    sweep runs on its own [settings] under the flags."""
    from prefcraft.experiments.sweeps import load_sweep, run_sweep  # Optuna and the steps' code: not loaded by `--help`

    if args.step == "check":
        return check_files(args.files, load_sweep, _describe, echo)
    return run_sweep(args.file, load_sweep(args.file), args.config, settings_overrides(args), echo)


def _describe(sweep: Any) -> str:
    return (f"{sweep.component} {sweep.step}: {', '.join(sweep.search)}; {sweep.study.n_trials} trials, "
            f"{', '.join(sweep.study.directions)}")
