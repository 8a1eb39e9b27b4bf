"""The `prefcraft` command line: `prefcraft <component> <step>` for each registered component, and the commands that
span them (serve, tour, experiment, sweep, report, settings). Parses flags into settings and calls a command; no logic
of its own."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

from prefcraft.commands import experiment_cli, report_cli, settings_cli, sweep_cli, tour_cli
from prefcraft.commands.serve import serve
from prefcraft.components.component import Emit, failed_items
from prefcraft.console import configure_logging, echo, results_on_stdout
from prefcraft.errors import PrefcraftError
from prefcraft.flags import (
    CommandParser,
    add_settings_flags,
    add_some_settings_flags,
    add_step_flags,
    add_verbose_flag,
    settings_overrides,
)
from prefcraft.options import options_from_args
from prefcraft.registry import COMPONENTS
from prefcraft.settings import load_settings

# Commands that span the components. Each module has HELP, add_steps(parser, add_settings_flags) and run(args, ...).
CROSS_CUTTING = {"tour": tour_cli, "experiment": experiment_cli, "report": report_cli, "sweep": sweep_cli,
                 "settings": settings_cli}


DESCRIPTION = """DSPy programs that personalize an LLM to one user, from five papers (one command each), compiled
against the papers' metrics and tracked in MLflow. Start with `prefcraft tour`: every component's demo on the embedded
model (a 135M model prefcraft serves itself, which proves the plumbing, not the papers' effects), one table at the end.
Then `prefcraft <component> --help`."""


def make_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line. Given the arguments it will parse, only the step they name gets its flags (its options model
    is imported then): listing the components or a component's steps imports no step's code."""
    chosen = _named_step(argv) if argv is not None else None
    parser = CommandParser(prog="prefcraft", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"prefcraft {version('prefcraft')}")
    commands = parser.add_subparsers(dest="command", required=True)
    for component in COMPONENTS.values():
        steps = commands.add_parser(component.name, help=component.help).add_subparsers(dest="step", required=True)
        for name, step in component.steps.items():
            step_parser = steps.add_parser(name, help=step.help, description=step.help)
            if argv is None or chosen == (component.name, name):
                add_step_flags(step_parser, step)
    add_some_settings_flags(commands.add_parser("serve", help="start a model server and keep it up"),
                            "server settings", lambda key: key.startswith("server."))
    for name, module in CROSS_CUTTING.items():
        module.add_steps(commands.add_parser(name, help=module.HELP), add_settings_flags)
    add_verbose_flag(parser)
    return parser


def _named_step(argv: Sequence[str]) -> tuple[str, str] | None:
    """The component and step `argv` names (its first two words: no flag before them takes a value), if any."""
    words = [arg for arg in argv if not arg.startswith("-")][:2]
    return (words[0], words[1]) if len(words) == 2 else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = make_parser(argv).parse_args(argv)
    configure_logging(args.verbose)
    try:
        settings = load_settings(getattr(args, "config", None), settings_overrides(args))  # a step may take none
        with results_on_stdout():
            outcome = run_command(args, settings)
    except PrefcraftError as error:
        print(f"prefcraft: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        if not _is_model_error(error):
            raise
        print(f"prefcraft: error: a model call failed ({type(error).__name__}): {error}\n"
              "  hint: check the server (its log is under .prefcraft/logs/ when prefcraft started it), or raise "
              "--task-timeout-s", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("prefcraft: interrupted", file=sys.stderr)
        return 130
    if failed := failed_items(outcome):
        print(f"prefcraft: {failed} item(s) failed and were counted, each with its reason in the results; the rest "
              "ran to the end", file=sys.stderr)
        return 1
    return 0


def _is_model_error(error: Exception) -> bool:
    """DSPy's error for a failed model call; DSPy is imported only by a step that calls a model."""
    dspy = sys.modules.get("dspy")
    return dspy is not None and isinstance(error, dspy.LMError)


def run_command(args: argparse.Namespace, settings: Any, emit: Emit = echo) -> Any:
    """Runs the parsed command, its results written with `emit`; returns its outcome (what its report was made from)."""
    if args.command in COMPONENTS:
        from prefcraft.runner import run_step  # the model session (DSPy): not loaded by `--help`

        options = options_from_args(COMPONENTS[args.command].steps[args.step].options, args)
        return run_step(args.command, args.step, options, settings, emit)
    if args.command == "serve":
        return serve(settings, emit)
    return CROSS_CUTTING[args.command].run(args, settings, emit)


if __name__ == "__main__":
    sys.exit(main())
