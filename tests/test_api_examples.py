"""docs/python-api.md's examples, each run as it is on the embedded server, and `prefcraft.load`'s errors."""

import json
import re
from pathlib import Path

import pytest

import prefcraft
from prefcraft.errors import CompiledProgramError
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"
EXAMPLES = re.findall(r"^## (.+?)$.*?^```python\n(.*?)^```$", DOC.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def test_every_component_has_an_example():
    assert [title for title, _ in EXAMPLES] == ["SynthesizeMe", "SenseJudge", "CUPID", "LaMP-QA", "PrefDisco"]


@pytest.mark.server
@pytest.mark.parametrize(("title", "code"), EXAMPLES, ids=[title for title, _ in EXAMPLES])
def test_the_example_runs(title, code, embedded_server, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the example's runs/ land here
    # The settings an example reads without being given any: the test's server, a tmp cache and store.
    for name, value in {"TASK__API_BASE": embedded_server.base_url, "TASK__MAX_TOKENS": "256", "NUM_THREADS": "2",
                        "CACHE_DIR": str(tmp_path / "cache"), "TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"
                        }.items():
        monkeypatch.setenv(f"PREFCRAFT_{name}", value)
    exec(compile(code, f"{DOC.name}: {title}", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_load_builds_the_program_its_file_names(tmp_path):
    path = save_compiled(PreferenceJudge("Likes short answers."), tmp_path / "u1.json",
                         program_name="personal_judge", user_id="u1")
    loaded = prefcraft.load(path)
    assert isinstance(loaded.program, PreferenceJudge) and loaded.metadata["user_id"] == "u1"
    assert loaded.program.dump_state() == PreferenceJudge("Likes short answers.").dump_state()


def test_load_names_the_file_without_metadata(tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"judge.predict": {}}))
    with pytest.raises(CompiledProgramError, match=f"{re.escape(str(path))} has no 'prefcraft' metadata block"):
        prefcraft.load(path)


@pytest.mark.parametrize(("program", "says"), [("recipe_writer", "a compiled 'recipe_writer', a program prefcraft"),
                                               (None, "no program name in its metadata")])
def test_load_names_the_file_of_an_unknown_program(tmp_path, program, says):
    path = save_compiled(PreferenceJudge(), tmp_path / "other.json", program_name=program)
    with pytest.raises(CompiledProgramError, match=f"{re.escape(str(path))} holds {says}") as error:
        prefcraft.load(path)
    assert "cupid_inferrer" in error.value.hint and "sensejudge" in error.value.hint
