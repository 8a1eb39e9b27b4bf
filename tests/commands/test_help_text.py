"""Every command's help is readable by a newcomer: each flag shows its default or what unset means, and each term a
newcomer would not know that a help text uses is in README's glossary."""

import argparse
import re
from pathlib import Path

import pytest

from tests.commands.test_cli_parsers import PARSERS
from tests.readme_words import flag_words, words_outside

README = Path(__file__).parents[2] / "README.md"
GLOSSED = ("verified", "step 1", "step 3", "labeled-only", "unshuffled", "bootstrapped", "trace", "population",
           "dev pairs", "test pairs", "beam", "sparse profile", "passive", "collaborative", "oracle", "oracle sessions",
           "Contriever", "BM25", "llguidance", "compact JSON", "@champion", "persona prompt", "PersonalRewardBench",
           "SenseBench", "position bias", "both orders", "successive halving", "Pareto front", "PlanPers", "RAG",
           "aspect score", "checklist", "decomposer", "inferrer", "rubric", "scenario", "GGUF", "litellm model string",
           "MIPROv2", "GEPA", "bootstrap_rs", "PrefAlign", "NormAlign", "embedded model", "small-model profile",
           "fitted judge", "hosted_vllm/")
"""Terms a newcomer would not know: wherever a help text uses one, the glossary defines it."""


def shown_flags():
    """(command, flag) for each flag a help lists that takes a value and may be left out."""
    for command, parser in PARSERS.items():
        for action in parser._actions:
            if action.option_strings and action.help != argparse.SUPPRESS and action.nargs != 0 \
                    and not action.required:
                yield command, action.option_strings[0]


def flag_help(command, flag):
    """The flag's help as printed, its default appended by the formatter."""
    parser = PARSERS[command]
    action = next(action for action in parser._actions if flag in action.option_strings)
    return " ".join(parser._get_formatter()._expand_help(action).split())


@pytest.mark.parametrize(("command", "flag"), list(shown_flags()))
def test_every_flag_says_its_default_or_what_unset_means(command, flag):
    text = flag_help(command, flag)
    assert "default" in text, f"{command} {flag}: no default, nor what leaving it out means: {text}"
    assert not re.search(r"\(default: (None)?\)", text), f"{command} {flag}: an empty default shown: {text}"


def glossary() -> set[str]:
    """The names the glossary defines (`- **name, other name**: ...`)."""
    section = README.read_text(encoding="utf-8").split("\n## Glossary\n")[1].split("\n## ")[0]
    return {name.strip().strip("`").lower() for entry in re.findall(r"^- \*\*(.+?)\*\*:", section, re.M)
            for name in entry.split(",")}


def uses(text: str, term: str) -> bool:
    """Whether `text` uses `term`, in prose or in a flag's name (`--oracle-sessions`), plural and possessive too."""
    words = re.escape(term).replace(r"\ ", "[ -]")
    return re.search(rf"(?<!\w){words}(s|es|'s)?(?!\w)", text, re.I) is not None


HELP_TEXTS = {command: " ".join(parser.format_help().split()) for command, parser in PARSERS.items()}


@pytest.mark.parametrize("command", HELP_TEXTS)
def test_every_term_a_help_uses_is_in_the_glossary(command):
    defined = glossary()
    missing = [term for term in GLOSSED
               if uses(HELP_TEXTS[command], term) and not any(uses(name, term) for name in defined)]
    assert not missing, f"{command}: terms README's glossary lacks: {missing}"


def test_every_listed_term_is_still_used_by_some_help():
    unused = [term for term in GLOSSED if not any(uses(text, term) for text in HELP_TEXTS.values())]
    assert not unused, f"no help uses these any more; drop them from GLOSSED: {unused}"


def test_a_steps_help_lists_its_own_flags_and_points_to_the_shared_settings():
    text = HELP_TEXTS["prefcraft cupid evaluate"]
    assert "--max-instances" in text and "prefcraft settings --help" in text
    assert "--task-model LITELLM_MODEL" not in text and "--tracking-uri" not in text
    listed = HELP_TEXTS["prefcraft settings"]
    assert "--tracking-uri URI" in listed and "TOML task.model, variable PREFCRAFT_TASK__MODEL" in listed


def test_every_settings_flag_names_a_real_key_and_variable():
    from prefcraft.flags import SETTING_KEYS, environment_variable
    from prefcraft.settings import ModelSettings, Settings, load_settings

    every_table = Settings(prompt=ModelSettings(), judge=ModelSettings())
    for key in SETTING_KEYS.values():
        table, _, name = key.rpartition(".")
        assert name in type(getattr(every_table, table) if table else every_table).model_fields, key
    assert environment_variable("server.slots") == "PREFCRAFT_SERVER__SLOTS"
    assert load_settings(environ={environment_variable("server.slots"): "2"}).server.slots == 2


def test_the_settings_command_prints_the_values_in_force(capsys, monkeypatch):
    from prefcraft.commands.main import main

    monkeypatch.setenv("PREFCRAFT_SEED", "3")
    assert main(["settings", "--threads", "8", "--judge-max-tokens", "64"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert {"threads = 8", "seed = 3", "judge.max_tokens = 64", "task.max_tokens = 512"} <= set(printed)


def test_every_flag_is_made_of_the_glossarys_flag_words():
    """One name per idea: a flag whose word the glossary's list lacks (`--validation` beside `--val-personas`,
    `--configs` beside `--config`) fails until the word is chosen on purpose and listed."""
    words = flag_words()
    outside = {f"{command} {flag}": words_outside(flag, words) for command, parser in PARSERS.items()
               for action in parser._actions if action.help != argparse.SUPPRESS
               for flag in action.option_strings if flag.startswith("--") and words_outside(flag, words)}
    assert not outside, f"flags with words outside README's flag words: {outside}"
    assert words_outside("--validation", words) == ["validation"]  # the former spelling of val is not among them
