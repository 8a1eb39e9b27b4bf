"""A step offers only the flags it can use, and its help names only flags it has. No model calls."""

import re

import pytest

from prefcraft.errors import ConfigError
from prefcraft.flags import CommandParser, parse_step, settings_flag_names
from prefcraft.options import add_option_flags, check_options
from prefcraft.registry import COMPONENTS

STEPS = [(component.name, step) for component in COMPONENTS.values() for step in component.steps]


@pytest.mark.parametrize(("component", "step"), STEPS)
def test_a_steps_help_names_only_its_own_flags_the_settings_or_another_steps(component, step):
    parser = CommandParser(add_help=False)
    add_option_flags(parser, COMPONENTS[component].steps[step].options)
    own = {flag for action in parser._actions for flag in action.option_strings}
    settings = {f"--{name.replace('_', '-')}" for name in settings_flag_names()}
    for action in parser._actions:
        # "for fit --persona-prompt" names another step's flag, after that step's name
        named = {flag for before, flag in re.findall(r"(\S*) (--[a-z][a-z-]*[a-z])", action.help or "")
                 if before not in COMPONENTS[component].steps}
        assert named <= own | settings, f"{component} {step} {action.option_strings[0]}: {action.help}"


def test_the_synthesizeme_demo_refuses_a_split_at_once(capsys):
    with pytest.raises(SystemExit):
        parse_step(COMPONENTS["synthesizeme"], "demo", ["--split", "val"])
    assert "unrecognized arguments: --split val" in capsys.readouterr().err
    problems: list[str] = []
    demo = COMPONENTS["synthesizeme"].steps["demo"].options
    assert check_options(demo, {"split": "val"}, ("steps", "demo"), "'prefcraft synthesizeme demo'", problems) is None
    assert problems == ["steps.demo.split: unknown option of 'prefcraft synthesizeme demo'"]
    assert parse_step(COMPONENTS["synthesizeme"], "demo", []).split == "test"


def test_the_api_refuses_a_demo_split_before_any_model_starts():
    import prefcraft

    with pytest.raises(ConfigError, match="split: unknown option"):
        prefcraft.run("synthesizeme", "demo", split="val")


def test_the_sensejudge_demos_annotator_help_names_what_the_demo_reads():
    parser = CommandParser(add_help=False)
    add_option_flags(parser, COMPONENTS["sensejudge"].steps["demo"].options)
    annotator = next(action for action in parser._actions if "--annotator" in action.option_strings)
    assert "--human-labels" not in annotator.help and "simulated_annotator" in annotator.help
