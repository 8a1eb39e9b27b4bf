"""`prefcraft experiment`: run an experiment file (`run`), or only validate experiment files (`check`).

An experiment file names a component, its steps in order with their options, and the settings (experiments/README.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefcraft.errors import ConfigError
from prefcraft.experiments import check_experiment, experiment_settings, is_settings_file
from prefcraft.flags import add_executor_flags, settings_overrides

HELP = "experiments as configuration: run a TOML file's steps under one MLflow run (run), or validate files (check)"


def add_steps(parser: argparse.ArgumentParser, add_settings_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    steps = parser.add_subparsers(dest="step", required=True)
    run_parser = steps.add_parser(
        "run", help="run the file's steps in order, under one MLflow run experiment:<name>",
        description="Runs the file's steps in order, under one MLflow run experiment:<name>, once the file has been "
        "checked as `experiment check` checks it. --executor and --address "
        "go to the steps that take them (fit, evaluate), over the file's options; the other steps run here.")
    run_parser.add_argument("file", type=Path, metavar="EXPERIMENT.toml", help="the experiment file to run")
    add_settings_flags(run_parser)  # over the file's [settings]: a test's server, a tmp store
    add_executor_flags(run_parser)  # over the file's options, for the steps that take them
    check_parser = steps.add_parser(
        "check", help="validate experiment files against the commands' options, and that every local file or folder "
        "they read exists; runs nothing")
    check_parser.add_argument("files", type=Path, nargs="+", metavar="EXPERIMENT.toml",
                              help="files to validate; settings files among them are named and skipped")
    check_parser.set_defaults(config=None)  # main() reads --config before any command; check takes no settings


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Any:
    """Runs the experiment (returns each step's outcome) or checks the files (returns the experiments). `settings` is
    not used: an experiment runs on its own [settings] under the flags."""
    from prefcraft.commands.experiment import run_experiment  # the steps' code: not loaded by `--help`

    if args.step == "check":
        return check_files(args.files, check_experiment,
                           lambda experiment: f"{experiment.component}: {', '.join(experiment.steps)}", echo,
                           skipped=lambda path: "settings file, skipped" if is_settings_file(path) else None)
    experiment = check_experiment(args.file)
    return run_experiment(args.file, experiment, experiment_settings(experiment, args.config, settings_overrides(args)),
                          echo, executor=args.executor, address=args.address)


def check_files(paths: list[Path], load: Callable[[Path], Any], describe: Callable[[Any], str],
                echo: Callable[[str], None], skipped: Callable[[Path], str | None] = lambda path: None) -> list[Any]:
    """Every file is loaded with `load`, but those `skipped` gives a reason for; the invalid ones are reported
    together, one line each."""
    loaded, errors = [], []
    for path in paths:
        reason = skipped(path)
        if reason:
            echo(f"{path}: {reason}")
            continue
        try:
            item = load(path)
        except ConfigError as error:
            errors.append(error)
            continue
        loaded.append(item)
        echo(f"{path}: ok ({describe(item)})")
    if errors:
        raise ConfigError("\n".join(error.message for error in errors), next((e.hint for e in errors if e.hint), None))
    return loaded
