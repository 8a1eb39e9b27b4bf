"""`prefcraft experiment`: run an experiment file (`run`), or only validate experiment files (`check`).

An experiment file names a component, its steps in order with their options, and the settings (experiments/README.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefcraft.errors import ConfigError
from prefcraft.experiments.files import check_experiment, experiment_settings, is_settings_file
from prefcraft.flags import add_executor_flags, settings_overrides

HELP = ("experiments as configuration: run a TOML file's steps under one MLflow run (run), validate files (check), or "
        "rehearse a paper-scale file on synthetic data and an instant server (rehearse)")


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
    add_rehearse(steps)


def add_rehearse(steps: Any) -> None:
    rehearse_parser = steps.add_parser(
        "rehearse", help="run a paper-scale file end to end on synthetic data and an instant server on loopback, and "
        "report what it cost: a plumbing and cost check, never a score",
        description="Writes the file's data in its released layout at the paper's size times --scale, starts an "
        "instant OpenAI-compatible server on loopback (every model role under a name of its own, the file's decoding "
        "kept), runs the steps as `experiment run` does and prints LM calls and tokens per role and per step beside "
        "the file's estimate, the longest prompt beside the context the file serves, wall and CPU time, peak memory, "
        "the LM cache's size, and the faults met and failed items counted. Exit status 0 when every step ran to the "
        "end, 2 on an unhandled error.")
    rehearse_parser.add_argument("file", type=Path, metavar="EXPERIMENT.toml", help="the experiment file to rehearse")
    rehearse_parser.add_argument("--scale", type=float, default=0.01,
                                 help="share of the paper's size, above 0 and at most 1 (default: 0.01)")
    rehearse_parser.add_argument("--work-dir", type=Path, default=None,
                                 help="where the data, outputs, LM cache and MLflow store go (default: a temporary "
                                 "folder, removed after)")
    rehearse_parser.add_argument("--context-tokens", type=int, default=None,
                                 help="the server refuses a prompt plus max_tokens over N tokens, as vLLM does "
                                 "(default: none, no limit)")
    rehearse_parser.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered HTTP 500")
    rehearse_parser.add_argument("--cut-rate", type=float, default=0.0, help="share of replies cut at max_tokens")
    rehearse_parser.add_argument("--threads", type=int, default=None,
                                 help="the steps' threads (default: the file's threads)")
    rehearse_parser.add_argument("--resume", action="store_true",
                                 help="continue a rehearsal killed midway in --work-dir: its data, LM cache and MLflow "
                                 "runs reused, the steps run with the settings' resume")
    rehearse_parser.add_argument("--server-url", default=None, metavar="URL",
                                 help="an instant server already running (python -m "
                                 "prefcraft.experiments.rehearsal.instant_server), e.g. http://127.0.0.1:8000/v1, "
                                 "instead of starting one; it injects its own faults (default: none, one started here)")
    rehearse_parser.add_argument("--endpoints", type=int, default=1, metavar="N",
                                 help="instant servers to start; with 2 or more every role's model reaches them all "
                                 "(api_bases: litellm's Router)")
    rehearse_parser.add_argument("--request-log", type=Path, default=None, metavar="FILE",
                                 help="the servers started here append a line per request: model, body hash, status "
                                 "(default: none, no log)")
    add_executor_flags(rehearse_parser)  # to the steps that take them, as `experiment run` gives them
    rehearse_parser.set_defaults(config=None)  # the file's own settings, pointed at the instant server


def run(args: argparse.Namespace, settings: Any, echo: Callable[[str], None]) -> Any:
    """Runs the experiment (returns each step's outcome) or checks the files (returns the experiments). `settings` is
    not used: an experiment runs on its own [settings] under the flags."""
    from prefcraft.experiments.running import run_experiment  # the steps' code: not loaded by `--help`

    if args.step == "check":
        return check_files(args.files, check_experiment,
                           lambda experiment: f"{experiment.component}: {', '.join(experiment.steps)}", echo,
                           skipped=lambda path: "settings file, skipped" if is_settings_file(path) else None)
    if args.step == "rehearse":
        return rehearse(args, echo)
    experiment = check_experiment(args.file)
    return run_experiment(args.file, experiment, experiment_settings(experiment, args.config, settings_overrides(args)),
                          echo, executor=args.executor, address=args.address, workers=args.workers)


def rehearse(args: argparse.Namespace, echo: Callable[[str], None]) -> Any:
    """Prints the rehearsal's table; an unhandled error in a step is a RehearsalError (exit status 2) after it."""
    from prefcraft.experiments.rehearsal.instant_server import Faults
    from prefcraft.experiments.rehearsal.report import format_rehearsal
    from prefcraft.experiments.rehearsal.run import RehearsalError, Serving
    from prefcraft.experiments.rehearsal.run import rehearse as rehearse_file

    faults = Faults(context_tokens=args.context_tokens, error_rate=args.error_rate, cut_rate=args.cut_rate)
    serving = Serving(args.server_url, args.endpoints, args.executor, args.address, args.request_log, args.workers)
    outcome = rehearse_file(args.file, args.scale, faults, work_dir=args.work_dir, threads=args.threads,
                            resume=args.resume, serving=serving, emit=echo)
    echo(format_rehearsal(outcome))
    if outcome.error is not None:
        raise RehearsalError(f"{args.file}: the rehearsal stopped: {outcome.error}")
    return outcome


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
