import json
from pathlib import Path

import pytest

from prefcraft.components.synthesizeme.fit import PERSONA_SYNTHESIZER, load_persona_synthesizer
from prefcraft.components.synthesizeme.released_prompt import import_released_persona_prompt
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.engine.adapter import SchemaAdapter
from prefcraft.errors import CompiledProgramError
from prefcraft.optimizers.artifacts import read_metadata, save_compiled
from prefcraft.programs.persona import PersonaSynthesizer

RELEASED = SAMPLE_USERS.with_name("released_persona_program.json")  # the released files' schema, our own text


def released_state() -> dict:
    return json.loads(RELEASED.read_text(encoding="utf-8"))


def write(tmp_path: Path, state: dict) -> Path:
    path = tmp_path / "released.json"
    path.write_text(json.dumps(state), encoding="utf-8")
    return path


def test_a_released_persona_program_loads_as_the_persona_prompt_fit_starts_from(tmp_path):
    imported = import_released_persona_prompt(RELEASED, tmp_path / "imported.json")

    synthesizer, source = load_persona_synthesizer(imported)
    predict = synthesizer.synthesize.predict
    assert source == str(imported)
    assert predict.signature.instructions == released_state()["synthesize.predict"]["signature"]["instructions"]
    assert list(predict.signature.fields) == ["past_judgments", "reasoning", "persona"]
    first = predict.demos[0]
    assert first["past_judgments"].startswith("**Conversation**: [user]: Which bus goes to the harbour?")
    assert first["reasoning"] == "The user picked the answer that names one line at once."
    assert first["persona"] == "A commuter who wants one direct answer and no hedging."
    assert len(predict.demos) == 2
    metadata = read_metadata(imported)
    assert metadata["program"] == PERSONA_SYNTHESIZER
    assert (metadata["imported_from"], metadata["imported_dspy_version"]) == (str(RELEASED), "2.6.12")


def test_the_model_reads_the_released_instructions_and_demos_under_prefcrafts_fields(tmp_path):
    synthesizer, _ = load_persona_synthesizer(import_released_persona_prompt(RELEASED, tmp_path / "imported.json"))
    predict = synthesizer.synthesize.predict

    messages = SchemaAdapter().format(predict.signature, predict.demos, {"past_judgments": "Judgment 1 ..."})
    prompt = "\n".join(message["content"] for message in messages)
    assert "as a travel agent would describe a client" in prompt
    assert "A careful reader who likes both sides of a question laid out." in prompt
    assert "synthesized_persona" not in prompt and "past_judgements" not in prompt
    assert "the user's judgments on earlier conversations" in prompt  # prefcraft's field descriptions


def test_a_prefcraft_compiled_prompt_is_not_imported(tmp_path):
    compiled = save_compiled(PersonaSynthesizer(), tmp_path / "compiled.json", program_name=PERSONA_SYNTHESIZER)
    with pytest.raises(CompiledProgramError, match="saved by prefcraft") as error:
        import_released_persona_prompt(compiled, tmp_path / "imported.json")
    assert "--persona-prompt" in error.value.hint


def test_a_demo_with_other_fields_is_refused(tmp_path):
    state = released_state()
    state["synthesize.predict"]["demos"][1]["judgements"] = state["synthesize.predict"]["demos"][1].pop(
        "past_judgements")
    with pytest.raises(CompiledProgramError, match=r"demo 2 has field\(s\) judgements"):
        import_released_persona_prompt(write(tmp_path, state), tmp_path / "imported.json")
    assert not (tmp_path / "imported.json").exists()


@pytest.mark.parametrize("state", [{"metadata": {}}, {"synthesize.predict": {"demos": []}}, ["not", "a", "program"]])
def test_a_file_without_the_released_predictor_is_refused(tmp_path, state):
    with pytest.raises(CompiledProgramError, match="not a released SynthesizeMe persona program"):
        import_released_persona_prompt(write(tmp_path, state), tmp_path / "imported.json")


def test_a_missing_or_broken_file_is_refused(tmp_path):
    with pytest.raises(CompiledProgramError, match="does not exist"):
        import_released_persona_prompt(tmp_path / "absent.json", tmp_path / "imported.json")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(CompiledProgramError, match="not valid JSON"):
        import_released_persona_prompt(tmp_path / "broken.json", tmp_path / "imported.json")
