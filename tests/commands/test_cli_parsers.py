"""Every parser of the command line: whole flags only, a help text and a shown default for each flag, bounds checked."""

import argparse
from pathlib import Path

import pytest

from prefcraft.commands.main import main, make_parser
from prefcraft.experiments.files import load_experiment
from prefcraft.flags import SETTING_KEYS, settings_overrides
from prefcraft.registry import COMPONENTS


def every_parser(parser=None, words=("prefcraft",)):
    """(command words, parser) for the top-level parser and every subcommand and step under it."""
    parser = parser or make_parser()
    yield words, parser
    for action in parser._actions:  # argparse offers no public way to reach subparsers
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from every_parser(subparser, (*words, name))


PARSERS = {" ".join(words): parser for words, parser in every_parser()}


@pytest.mark.parametrize("command", PARSERS)
def test_every_flag_has_a_help_text(command):
    parser = PARSERS[command]
    assert not parser.allow_abbrev
    missing = [action.option_strings or [action.dest] for action in parser._actions
               if not isinstance(action, argparse._SubParsersAction) and not action.help]
    assert not missing, f"{command}: flags without help: {missing}"


@pytest.mark.parametrize("command", [command for command in PARSERS if "compile" in command.split()])
def test_a_misspelt_flag_stops_before_anything_runs(command, capsys):
    # `--candidate` was taken as `--candidates` by prefix matching: a paper-scale compile started.
    with pytest.raises(SystemExit) as exited:
        main([*command.split()[1:], "--candidate", "3", "--no-serve", "--task-api-base", "http://127.0.0.1:1/v1"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --candidate 3" in capsys.readouterr().err


def test_the_help_shows_each_default(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no line broken inside a flag's name
    text = " ".join(PARSERS["prefcraft cupid compile"].format_help().split())
    assert "personas held out for testing (default: 2)" in text
    assert "--optimizer {miprov2,gepa,bootstrap_rs} miprov2 (DSPy's MIPROv2" in text
    assert "(default: miprov2)" in text and "paper" not in text.split("--candidates")[1].split("--max-b")[0]
    assert "(default: None)" not in text and "(default: False)" not in text
    # the shared settings show theirs in `prefcraft settings --help`: prefcraft's own, under any config file or variable
    listed = " ".join(PARSERS["prefcraft settings"].format_help().split())
    for shown in ("--task-max-tokens N longest answer, in tokens (default: 512)",
                  "(default: hosted_vllm/SmolLM2-135M-Instruct)", "parallel LM calls (default: 4)",
                  "is never sent again (default: 300.0)",
                  "(default: 0)", "--judge-max-tokens N --task-max-tokens for the judge model (default: the task "
                  "model's)"):
        assert shown in listed, shown
    assert "--judge-max-tokens" not in text  # the step's help points there instead
    assert make_parser().parse_args(["cupid", "compile", "--judge-max-tokens", "64"]).judge_max_tokens == 64


def test_a_step_lists_its_required_flags_first_and_in_its_usage_line():
    text = PARSERS["prefcraft synthesizeme compile-persona"].format_help()
    usage, options = text.split("\noptions:")
    assert "--train-users USER ... --val-users USER ... --output PATH" in " ".join(usage.split())
    flags = [line.split()[0] for line in options.splitlines() if line.startswith("  --")]
    assert flags[:3] == ["--train-users", "--val-users", "--output"]


@pytest.mark.parametrize("argv", [["-v", "cupid", "evaluate"], ["cupid", "evaluate", "--verbose"],
                                  ["cupid", "-v", "evaluate"], ["experiment", "check", "x.toml", "-v"], ["tour", "-v"],
                                  ["serve", "--verbose"]])
def test_verbose_is_taken_anywhere_on_the_line(argv):
    assert make_parser().parse_args(argv).verbose is True
    assert make_parser().parse_args([word for word in argv if word not in ("-v", "--verbose")]).verbose is False


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out.startswith("prefcraft 0.")


@pytest.mark.parametrize("command", ["cupid evaluate", "report"])
def test_a_renamed_flag_is_taken_for_one_release_naming_the_new_one(command, caplog):
    assert make_parser().parse_args([*command.split(), "--experiment", "mine"]).mlflow_experiment == "mine"
    assert "--experiment is now --mlflow-experiment; --experiment goes in the next release" in caplog.text
    assert make_parser().parse_args([*command.split(), "--mlflow-experiment", "mine"]).mlflow_experiment == "mine"


def test_every_server_flag_has_the_server_prefix_and_the_former_ones_still_work(caplog):
    flags = [flag for action in PARSERS["prefcraft settings"]._actions for flag in action.option_strings
             if action.help != argparse.SUPPRESS]
    assert [flag for flag in flags if "server" in flag and flag != "--no-serve"] == \
        [flag for flag in flags if flag.startswith(("--server-", "--no-server-"))]
    args = make_parser().parse_args(["cupid", "evaluate", "--backend", "vllm", "--port", "8001", "--slots", "2"])
    assert settings_overrides(args)["server"] == {"backend": "vllm", "port": 8001, "slots": 2}
    assert "--slots is now --server-slots" in caplog.text


def test_a_step_that_runs_no_model_takes_only_the_settings_it_uses(capsys):
    imported = PARSERS["prefcraft synthesizeme import-persona-prompt"]
    assert not any(action.dest in SETTING_KEYS for action in imported._actions)  # untracked: no settings at all
    assert "[shared settings]" not in imported.format_help()
    with pytest.raises(SystemExit):
        make_parser().parse_args(["synthesizeme", "import-persona-prompt", "--released", "r.json", "--output", "p.json",
                                  "--task-model", "hosted_vllm/x"])
    assert "unrecognized arguments: --task-model" in capsys.readouterr().err
    built = {action.dest for action in PARSERS["prefcraft prefdisco build-scenarios"]._actions
             if action.dest in SETTING_KEYS}
    assert built == {"seed", "resume", "tracking_uri", "mlflow_experiment"}  # tracked, seeded, no model


def test_serve_takes_the_servers_settings_only():
    flags = {option for action in PARSERS["prefcraft serve"]._actions for option in action.option_strings}
    assert {"--server-backend", "--server-model", "--server-slots", "--config"} <= flags
    assert not flags & {"--no-serve", "--resume", "--tracking-uri", "--task-model"}


@pytest.mark.parametrize(("argv", "message"), [
    (["cupid", "compile", "--candidates", "0"], "argument --candidates: 0 is not at least 1"),
    (["prefdisco", "evaluate", "--test-share", "1.5"], "argument --test-share: 1.5 is not between 0.0 and 1.0"),
    (["cupid", "evaluate", "--val-personas", "x"], "argument --val-personas: invalid int value: 'x'"),
])
def test_a_number_out_of_its_bounds_is_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        make_parser().parse_args(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_component_is_one_command_with_its_steps(component, capsys):
    with pytest.raises(SystemExit) as exited:
        main([component, "--help"])
    assert exited.value.code == 0
    listed = capsys.readouterr().out
    assert all(step in listed for step in COMPONENTS[component].steps)


@pytest.mark.parametrize("command", [f"{name} {step}" for name, component in COMPONENTS.items()
                                     for step, declared in component.steps.items() if declared.models])
def test_a_steps_own_options_come_before_the_settings_group(command):
    options = PARSERS[f"prefcraft {command}"].format_help().split("\noptions:")[1]  # after the usage lines
    own, settings = options.split("\nshared settings:\n")
    assert "--task-model" in settings and "--task-model" not in own
    assert "prefcraft settings --help" in " ".join(settings.split()) and len(settings.splitlines()) <= 3  # a pointer
    assert own.count("\n  --") >= 1  # at least one option of the step's own (or --help alone for none)


def test_a_former_option_name_is_taken_for_one_release_naming_the_new_one(caplog, tmp_path):
    args = make_parser().parse_args(["sensejudge", "simulate", "--dialogues", "bench.json"])
    assert str(args.sensebench) == "bench.json" and "--dialogues is now --sensebench" in caplog.text
    # simulate writes the pairs: --output, as every step that writes a file
    args = make_parser().parse_args(["sensejudge", "simulate", "--sensebench", "b.json", "--pairs", "p.jsonl"])
    assert str(args.output) == "p.jsonl" and "--pairs is now --output" in caplog.text
    experiment = tmp_path / "sensejudge.toml"
    experiment.write_text('name = "t"\ncomponent = "sensejudge"\n[steps.simulate]\ndialogues = "bench.json"\n')
    assert load_experiment(experiment).steps["simulate"] == {"sensebench": Path("bench.json")}
    assert "option dialogues is now sensebench; dialogues goes in the next release" in caplog.text


def test_a_former_value_is_taken_for_one_release_naming_the_new_one(caplog, tmp_path):
    assert make_parser().parse_args(["lampqa", "evaluate", "--split", "validation"]).split == "val"
    assert "'validation' is now 'val'; 'validation' goes in the next release" in caplog.text
    experiment = tmp_path / "lampqa.toml"
    experiment.write_text('name = "t"\ncomponent = "lampqa"\n[steps.evaluate]\nsplit = "validation"\n')
    assert load_experiment(experiment).steps["evaluate"] == {"split": "val"}


def test_fit_takes_no_flag_it_would_not_use(capsys):
    # fit judges no split and writes no result file: its --split and --output-dir did nothing
    for flag in ("--split", "--output-dir"):
        with pytest.raises(SystemExit):
            make_parser().parse_args(["synthesizeme", "fit", flag, "x"])
        assert f"unrecognized arguments: {flag} x" in capsys.readouterr().err
    assert make_parser().parse_args(["synthesizeme", "evaluate", "--split", "val"]).split == "val"  # evaluate judges
    with pytest.raises(SystemExit):  # the demo judges the test split alone
        make_parser().parse_args(["synthesizeme", "demo", "--split", "val"])


def test_the_seed_is_a_flag_as_the_help_of_the_steps_it_seeds_says():
    args = make_parser().parse_args(["prefdisco", "build-scenarios", "--personas", "3", "--seed", "7"])
    assert settings_overrides(args)["seed"] == 7 and "seeded by --seed" in PARSERS[
        "prefcraft prefdisco build-scenarios"].format_help()
    assert "seed" not in settings_overrides(make_parser().parse_args(["prefdisco", "build-scenarios"]))


HEAVY = ("dspy", "litellm", "mlflow", "optuna", "matplotlib")
LISTING_IMPORTS = """
import sys
from prefcraft.commands.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(sorted(name for name in {heavy} if name in sys.modules)))
"""


@pytest.mark.parametrize("argv", [["--help"], *([name, "--help"] for name in COMPONENTS), ["experiment", "--help"]])
def test_listing_the_commands_or_a_components_steps_loads_no_model_code(argv):
    """`prefcraft --help` and `prefcraft <component> --help` stay fast: no DSPy, LiteLLM, MLflow, Optuna or
    matplotlib is imported until a step's flags are built or a step runs."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", LISTING_IMPORTS.format(heavy=HEAVY), *argv], capture_output=True,
                          text=True, check=True, timeout=120)
    assert done.stdout.splitlines()[-1] == "", f"imported by prefcraft {' '.join(argv)}: {done.stdout.splitlines()[-1]}"


def test_given_its_arguments_the_parser_builds_only_the_named_steps_flags():
    parser = make_parser(["cupid", "evaluate", "--max-instances", "2"])
    assert parser.parse_args(["cupid", "evaluate", "--max-instances", "2"]).max_instances == 2
    with pytest.raises(SystemExit):  # another step's flags are not built: its parser takes no flag
        parser.parse_args(["cupid", "compile", "--trials", "3"])
    assert make_parser(["-v", "lampqa", "demo"]).parse_args(["-v", "lampqa", "demo"]).k == 5  # the demo's k


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_step_imports_its_options_and_code(component):
    from prefcraft.components.component import ReportCharts
    from prefcraft.options import Options

    registered = COMPONENTS[component]
    for name, step in registered.steps.items():
        assert issubclass(step.options, Options), name
        assert all(callable(function) for function in (step.work, step.report, step.load)), name
    assert isinstance(registered.charts, ReportCharts)
    assert registered.programs and all(callable(build) for build in registered.programs.values())
