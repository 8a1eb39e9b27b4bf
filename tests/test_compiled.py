"""Programs shipped in compiled/: every one is a real compile, never its starting program saved under another name."""

import importlib
import json

import pytest

from prefcraft.commands.fit import default_persona_prompt, load_persona_synthesizer
from prefcraft.optimizers.artifacts import COMPILED_DIR, COMPILED_INDEX, load_compiled
from prefcraft.settings import ModelSettings

# Program name in compiled/index.json -> the uncompiled program it starts from. A new shipped program adds itself here.
STARTING_PROGRAMS = {
    "persona_synthesizer": "prefcraft.programs.persona:PersonaSynthesizer",
    "cupid_inferrer": "prefcraft.programs.cupid:PreferenceInferrer",
}


def _shipped() -> list[tuple[str, str, str]]:
    index = json.loads(COMPILED_INDEX.read_text(encoding="utf-8"))
    return [(name, entry["model"], entry["path"]) for name, entries in index.items() for entry in entries]


def _fresh(program_name: str):
    module, _, cls = STARTING_PROGRAMS[program_name].partition(":")
    return getattr(importlib.import_module(module), cls)()


def _prompts(program) -> list[tuple[str, int]]:
    return [(predictor.signature.instructions, len(predictor.demos)) for predictor in program.predictors()]


@pytest.mark.parametrize(("program_name", "model", "path"), _shipped())
def test_a_shipped_program_loads_and_differs_from_its_starting_program(program_name, model, path):
    assert program_name in STARTING_PROGRAMS, f"add {program_name}'s starting program to STARTING_PROGRAMS"
    compiled = _fresh(program_name)
    metadata = load_compiled(compiled, COMPILED_DIR / path, program_name=program_name)
    assert metadata["model"] == model
    assert _prompts(compiled) != _prompts(_fresh(program_name)), "a compile that changed nothing ships nothing"


def test_without_a_shipped_persona_prompt_fits_use_the_uncompiled_one():
    # None ships for the embedded model: its compile chose the starting prompt (see the README's SynthesizeMe section).
    assert default_persona_prompt(ModelSettings().model) is None
    assert default_persona_prompt("openai/some-other-model") is None
    assert load_persona_synthesizer(None)[1] == "uncompiled"
