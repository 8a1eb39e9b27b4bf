"""A step's options model makes its flags: names, help, defaults, bounds, choices, lists, switches, required flags and
groups; the command line and an options file give the same options. No model calls."""

from pathlib import Path
from typing import Literal

import pytest

from prefcraft.flags import CommandParser, parse_step
from prefcraft.options import (
    Count,
    FilePath,
    OneOrMore,
    Options,
    Positive,
    Share,
    add_option_flags,
    check_options,
    option,
    options_from_args,
)
from prefcraft.registry import COMPONENTS


class Example(Options):
    source: str | None = option(None, "where the rows come from")
    rounds: Positive = option(3, "how many rounds")
    skipped: Count | None = option(None, "rows to skip")
    share: Share = option(0.25, "held-out share", group="split")
    split: Literal["val", "test"] = option("test", "which split", group="split")
    methods: OneOrMore[Literal["a", "b"]] = option(["a"], "methods to compare")
    responses: list[str] = option(["x", "y"], "responses, none allowed", metavar="NAME")
    output: FilePath = option(Path("out.json"), "file to write")
    verbose: bool = option(False, "say more")
    use_cache: bool = option(True, "without the cache", flag="--no-cache")
    users: OneOrMore[str] = option(..., "users to fit")


def parse(argv: list[str]) -> Example:
    parser = CommandParser(prog="t")
    add_option_flags(parser, Example)
    return options_from_args(Example, parser.parse_args(argv))


def test_each_field_is_a_flag_with_its_default_type_and_dest():
    options = parse(["--users", "u1", "u2"])
    assert options == Example(users=["u1", "u2"])
    given = parse(["--users", "u", "--source", "s.jsonl", "--rounds", "5", "--skipped", "0", "--share", "0.5",
                   "--split", "val", "--methods", "b", "a", "--responses", "--output", "o.json", "--verbose",
                   "--no-cache"])
    assert given.model_dump() == {
        "source": "s.jsonl", "rounds": 5, "skipped": 0, "share": 0.5, "split": "val", "methods": ["b", "a"],
        "responses": [], "output": Path("o.json"), "verbose": True, "use_cache": False, "users": ["u"]}


@pytest.mark.parametrize(("argv", "said"), [
    (["--rounds", "0"], "argument --rounds: 0 is not at least 1"),
    (["--skipped", "-1"], "argument --skipped: -1 is not at least 0"),
    (["--share", "1.5"], "argument --share: 1.5 is not between 0.0 and 1.0"),
    (["--rounds", "two"], "argument --rounds: invalid int value: 'two'"),
    (["--split", "train"], "argument --split: invalid choice: 'train'"),
    (["--methods"], "argument --methods: expected at least one argument"),
    ([], "the following arguments are required: --users"),
])
def test_a_bad_flag_is_refused_as_the_model_would(argv, said, capsys):
    with pytest.raises(SystemExit):
        parse([*argv, *(["--users", "u"] if argv else [])])
    assert said in capsys.readouterr().err


def test_the_help_lists_groups_metavars_and_defaults():
    parser = CommandParser(prog="t")
    add_option_flags(parser, Example)
    text = " ".join(parser.format_help().split())
    assert "split: --share X held-out share (default: 0.25)" in text
    assert "--responses [NAME ...] responses, none allowed (default: x y)" in text
    assert "--no-cache without the cache" in text and "--users USERS [USERS ...] users to fit" in text


def test_a_file_is_checked_strictly_against_the_same_model():
    problems: list[str] = []
    given = {"users": ["u"], "rounds": "3", "verbose": 1, "share": 2.0, "unknown": True, "task_model": "x"}
    assert check_options(Example, given, ("steps", "fit"), "'prefcraft t fit'", problems,
                         frozenset({"task_model"})) is None
    assert problems == [
        "steps.fit.rounds: Input should be a valid integer",
        "steps.fit.share: Input should be less than or equal to 1",
        "steps.fit.verbose: Input should be a valid boolean",
        "steps.fit.unknown: unknown option of 'prefcraft t fit'",
        "steps.fit.task_model: a settings flag, not an option of 'prefcraft t fit': set it in the [settings] tables",
    ]
    assert check_options(Example, {"users": ["u"], "output": "o.json"}, (), "t", problems).output == Path("o.json")


def test_a_switch_on_by_default_needs_a_flag_that_turns_it_off():
    class Broken(Options):
        use_cache: bool = option(True, "the cache")

    with pytest.raises(TypeError, match="use_cache: a switch that is on by default needs a flag"):
        add_option_flags(CommandParser(), Broken)


REQUIRED = {("synthesizeme", "compile-persona"): {"train_users": ["a"], "val_users": ["b"], "output": Path("p.json")},
            ("synthesizeme", "import-persona-prompt"): {"released": Path("r.json"), "output": Path("p.json")},
            ("synthesizeme", "best-of-n"): {"judge_file": Path("u1.json"), "requests": Path("requests.jsonl")},
            ("sensejudge", "simulate"): {"sensebench": Path("d.json")},
            ("sensejudge", "demo"): {"sensebench": Path("d.json")}}


@pytest.mark.parametrize(("component", "step"), [(component.name, step) for component in COMPONENTS.values()
                                                 for step in component.steps])
def test_every_step_gives_the_same_options_from_its_flags_and_from_a_file(component, step):
    required = REQUIRED.get((component, step), {})
    argv = [word for name, value in required.items()
            for word in (f"--{name.replace('_', '-')}", *(value if isinstance(value, list) else [str(value)]))]
    options = COMPONENTS[component].steps[step].options
    assert parse_step(COMPONENTS[component], step, argv) == options.model_validate(required)


def test_a_switch_is_given_by_its_flags_name_and_its_old_key_still_works_with_a_warning(caplog):
    problems: list[str] = []
    assert check_options(Example, {"users": ["u"], "no_cache": True}, (), "t", problems).use_cache is False
    assert check_options(Example, {"users": ["u"], "no_cache": False}, (), "t", problems).use_cache is True
    assert not caplog.records
    assert check_options(Example, {"users": ["u"], "use_cache": False}, (), "t", problems).use_cache is False
    assert "option use_cache is now no_cache (no_cache = true)" in caplog.text
    assert check_options(Example, {"users": ["u"], "no_cache": "yes"}, ("steps", "fit"), "t", problems) is None
    assert problems == ["steps.fit.no_cache: Input should be a valid boolean"]


def test_the_command_line_gives_a_switch_without_the_old_keys_warning(caplog):
    assert parse(["--users", "u", "--no-cache"]).use_cache is False
    assert parse(["--users", "u"]).use_cache is True
    assert not caplog.records


def test_only_a_switch_on_by_default_takes_a_flag_of_its_own():
    class Broken(Options):
        rounds: int = option(3, "rounds", flag="--turns")

    with pytest.raises(TypeError, match="rounds: only a switch on by default takes a flag of its own"):
        add_option_flags(CommandParser(), Broken)


@pytest.mark.parametrize(("component", "step", "key"), [("cupid", "evaluate", "no_shipped"),
                                                        ("lampqa", "evaluate", "no_shipped"),
                                                        ("prefdisco", "evaluate", "no_shipped"),
                                                        ("sensejudge", "select", "no_long_input_cut")])
def test_every_switch_of_the_steps_takes_its_flags_name_in_a_file(component, step, key):
    options = COMPONENTS[component].steps[step].options
    flag = f"--{key.replace('_', '-')}"
    required = REQUIRED.get((component, step), {})
    argv = [word for name, value in required.items() for word in (f"--{name.replace('_', '-')}", str(value))]
    assert parse_step(COMPONENTS[component], step, [*argv, flag]) == options.model_validate({**required, key: True})
