"""Programs shipped in compiled/: every one is a real compile, never its starting program saved under another name,
and every demo it holds reaches the prompt its predictor sends, with its answer."""

import importlib
import json

import dspy
import pytest

from prefcraft.components.synthesizeme.fit import default_persona_prompt, load_persona_synthesizer
from prefcraft.engine.adapter import SchemaAdapter
from prefcraft.metrics.degenerate import is_degenerate, text_output_fields
from prefcraft.optimizers.artifacts import COMPILED_DIR, COMPILED_INDEX, load_compiled
from prefcraft.optimizers.cupid import load_inferrer
from prefcraft.programs.cupid import PreferenceInferrer
from prefcraft.settings import ModelSettings

# Program name in compiled/index.json -> the uncompiled program it starts from. A new shipped program adds itself here.
STARTING_PROGRAMS = {
    "persona_synthesizer": "prefcraft.programs.persona:PersonaSynthesizer",
    "cupid_inferrer": "prefcraft.programs.cupid:PreferenceInferrer",
}


# Program name -> how the package loads a shipped file of it (the loader commands use).
SHIPPED_LOADERS = {
    "persona_synthesizer": lambda path: load_persona_synthesizer(path)[0],
    "cupid_inferrer": lambda path: load_inferrer(path)[0],
}
INCOMPLETE_DEMO = "some input or output fields are not supplied"  # DSPy's prefix for a demo it shows in part


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


@pytest.mark.parametrize(("program_name", "model", "path"), _shipped())
def test_every_demo_of_a_shipped_program_reaches_its_prompt_with_its_answer(program_name, model, path):
    assert program_name in SHIPPED_LOADERS, f"add how the package loads {program_name} to SHIPPED_LOADERS"
    assert _unshown_demos(SHIPPED_LOADERS[program_name](COMPILED_DIR / path)) == []


def test_the_demo_check_catches_a_demo_without_its_answer_or_with_a_degenerate_one():
    """What the check above finds in a program, shown on the shape of the inferrer once shipped (gold under
    `gold_preference`, which the adapter drops), a degenerate answer, and a demo that reaches the prompt whole."""
    request = {"sessions": ["[user]: Explain Catan.\n[assistant]: Done."], "current_request": "Explain Azul."}
    inferrer = PreferenceInferrer("all")
    inferrer.infer.demos = [dspy.Example(**request, gold_preference="Walk through a sample first turn.")]
    assert _unshown_demos(inferrer) == ["infer holds 1 demos but its prompt shows 0"]
    analysis = "The user asked for an example in the last session."
    inferrer.infer.demos = [dspy.Example(**request, analysis=analysis, preference="Preference")]
    assert _unshown_demos(inferrer) == ["infer: a demo's preference is degenerate ('Preference')"]
    inferrer.infer.demos = [dspy.Example(**request, analysis=analysis, preference="Walk through a sample first turn.")]
    assert _unshown_demos(inferrer) == []


def _unshown_demos(program) -> list[str]:
    """What keeps a demo from the prompts the program sends, rendered for a sample input by the project's adapter: each
    demo must be one complete user/assistant turn pair whose assistant turn holds its outputs, none degenerate."""
    problems, adapter = [], SchemaAdapter()
    for name, predictor in program.named_predictors():
        signature = predictor.signature
        sample = {field: f"sample {field}" for field in signature.input_fields}
        turns = adapter.format(signature, predictor.demos, sample)[1:-1]  # between the system message and the input
        if [turn["role"] for turn in turns] != ["user", "assistant"] * len(predictor.demos):
            problems.append(f"{name} holds {len(predictor.demos)} demos but its prompt shows {len(turns) // 2}")
            continue
        problems += [f"{name}: a demo is shown in part" for turn in turns if INCOMPLETE_DEMO in turn["content"]]
        for demo, answer in zip(predictor.demos, turns[1::2], strict=True):
            outputs = {field: demo.get(field) for field in signature.output_fields}
            if json.loads(answer["content"]) != json.loads(json.dumps(outputs, default=str)):
                problems.append(f"{name}: a demo's answer turn is not its outputs ({outputs})")
            problems += [f"{name}: a demo's {field} is degenerate ({outputs[field]!r})"
                         for field in text_output_fields(signature) if is_degenerate(outputs[field], field)]
    return problems


def test_without_a_shipped_persona_prompt_fits_use_the_uncompiled_one():
    # None ships for the embedded model: its compile chose the starting prompt (see docs/synthesizeme.md).
    assert default_persona_prompt(ModelSettings().model) is None
    assert default_persona_prompt("openai/some-other-model") is None
    assert load_persona_synthesizer(None)[1] == "uncompiled"
