import json

import dspy
import pytest

from prefcraft.errors import CompiledProgramError
from prefcraft.optimizers import artifacts
from prefcraft.optimizers.artifacts import (
    load_compiled,
    read_metadata,
    register_compiled,
    save_compiled,
    shipped_compiled,
)
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer

DEMO = dspy.Example(
    conversation="[user]: hi", first_completion="Hello!", second_completion="Greetings.", reasoning="short wins",
    preference="First",
).with_inputs("conversation", "first_completion", "second_completion")


def fitted_judge() -> PreferenceJudge:
    judge = PreferenceJudge("Prefers short, casual answers.")
    judge.demos = [DEMO]
    return judge


def test_round_trip_restores_persona_instructions_demos_and_metadata(tmp_path):
    path = save_compiled(fitted_judge(), tmp_path / "u1.json", program_name="personal_judge", model="m", score=0.75)
    loaded = PreferenceJudge()
    metadata = load_compiled(loaded, path, program_name="personal_judge")
    assert "Prefers short, casual answers." in loaded.judge.predict.signature.instructions
    assert loaded.demos[0]["reasoning"] == "short wins"
    assert metadata["model"] == "m" and metadata["score"] == 0.75 and metadata["dspy_version"].startswith("3.4")
    original = fitted_judge()
    assert loaded.judge.predict.signature.instructions == original.judge.predict.signature.instructions
    assert [dict(demo) for demo in loaded.demos] == [dict(demo) for demo in original.demos]


def test_wrong_program_is_refused_before_anything_is_loaded(tmp_path):
    path = save_compiled(fitted_judge(), tmp_path / "u1.json", program_name="personal_judge")
    synthesizer = PersonaSynthesizer()
    before = synthesizer.dump_state()
    with pytest.raises(CompiledProgramError, match="not a 'persona_synthesizer'"):
        load_compiled(synthesizer, path, program_name="persona_synthesizer")
    assert synthesizer.dump_state() == before


def test_missing_corrupt_and_foreign_files_give_clear_errors(tmp_path):
    with pytest.raises(CompiledProgramError, match="does not exist"):
        read_metadata(tmp_path / "absent.json")
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    with pytest.raises(CompiledProgramError, match="not valid JSON"):
        read_metadata(corrupt)
    foreign = tmp_path / "foreign.json"
    PreferenceJudge().save(str(foreign))
    with pytest.raises(CompiledProgramError, match="metadata"):
        read_metadata(foreign)


def test_a_failed_save_leaves_the_previous_file_intact(tmp_path):
    path = save_compiled(fitted_judge(), tmp_path / "u1.json", program_name="personal_judge", score=1)
    with pytest.raises(TypeError):
        save_compiled(fitted_judge(), path, program_name="personal_judge", score=object.__new__(type("Bad", (), {
            "__str__": lambda self: (_ for _ in ()).throw(TypeError("cannot serialize"))})))
    assert json.loads(path.read_text())["prefcraft"]["score"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["u1.json"]


def test_registering_replaces_the_entry_for_the_same_model_and_refuses_files_outside_the_package(
    tmp_path, monkeypatch
):
    (tmp_path / "compiled").mkdir()
    monkeypatch.setattr(artifacts, "COMPILED_DIR", tmp_path / "compiled")
    monkeypatch.setattr(artifacts, "COMPILED_INDEX", tmp_path / "compiled" / "index.json")
    first, second = tmp_path / "compiled" / "asker" / "a.json", tmp_path / "compiled" / "asker" / "b.json"
    assert register_compiled("asker", "m1", first)
    assert register_compiled("asker", "m2", first)
    assert register_compiled("asker", "m1", second)
    assert shipped_compiled("asker", "m1") == second and shipped_compiled("asker", "m2") == first
    assert shipped_compiled("asker", "m3") is None and shipped_compiled("judge", "m1") is None
    assert not register_compiled("asker", "m1", tmp_path / "elsewhere.json")
    assert json.loads((tmp_path / "compiled" / "index.json").read_text())["asker"][-1]["path"] == "asker/b.json"


def test_a_program_that_lost_its_compile_loads_by_path_with_one_line_saying_so(tmp_path, caplog):
    lost = save_compiled(fitted_judge(), tmp_path / "lost.json", program_name="personal_judge", won=False,
                         verdict="it did not beat the uncompiled program")
    won = save_compiled(fitted_judge(), tmp_path / "won.json", program_name="personal_judge", won=True)
    load_compiled(PreferenceJudge(), won, program_name="personal_judge")
    assert not caplog.records
    assert load_compiled(PreferenceJudge(), lost, program_name="personal_judge")["won"] is False
    assert [record.getMessage() for record in caplog.records] == [
        f"{lost} did not beat its uncompiled start (it did not beat the uncompiled program): loaded as asked, but it "
        "is no shipped program"]


def test_a_shipped_file_a_losing_compile_was_written_over_is_no_default(tmp_path, monkeypatch, caplog):
    (tmp_path / "compiled").mkdir()
    monkeypatch.setattr(artifacts, "COMPILED_DIR", tmp_path / "compiled")
    monkeypatch.setattr(artifacts, "COMPILED_INDEX", tmp_path / "compiled" / "index.json")
    path = save_compiled(fitted_judge(), tmp_path / "compiled" / "judge.json", program_name="personal_judge", won=True)
    assert register_compiled("personal_judge", "m", path) and shipped_compiled("personal_judge", "m") == path
    save_compiled(fitted_judge(), path, program_name="personal_judge", won=False, verdict="no better")
    assert shipped_compiled("personal_judge", "m") is None
    assert "did not beat its start has been written over it" in caplog.text
