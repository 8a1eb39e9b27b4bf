"""`experiment check` checks every local path an experiment reads: the path options its steps' job types declare, the
names the loaders read as local files, and the model server's files; not what a run writes, nor dataset names. A
missing path is reported with what the file's comments say of it, and a shipped file says how to get each one it
lacks. No model calls."""

from pathlib import Path

import pytest
from toml_files import write

from prefcraft.commands.main import main
from prefcraft.components.cupid.options import EvaluateOptions as CupidEvaluate
from prefcraft.components.prefdisco.options import BuildOptions
from prefcraft.components.sensejudge.options import SelectOptions, SimulateOptions
from prefcraft.components.synthesizeme.options import BestOfNOptions, FitOptions, ImportPersonaPromptOptions
from prefcraft.errors import ConfigError
from prefcraft.experiments.files import (
    check_experiment,
    comment_sentences,
    load_experiment,
    missing_paths,
    read_path_options,
)
from prefcraft.options import FilePath, Options, option
from prefcraft.registry import COMPONENTS

ROOT = Path(__file__).parents[1]
SETTINGS_FILES = {"embedded.toml", "vllm-qwen7b.toml"}
SHIPPED = sorted(path for path in (ROOT / "experiments").glob("*.toml") if path.name not in SETTINGS_FILES)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.name)
def test_a_shipped_file_says_how_to_get_each_path_it_lacks(path, monkeypatch):
    """A file may name a file the user downloads or makes first, if its comments name it (its path or file name)."""
    monkeypatch.chdir(ROOT)  # the files' paths are relative to the repository root
    undocumented = [missing.key for missing in missing_paths(path, load_experiment(path)) if not missing.comments]
    assert not undocumented, f"{path.name} names missing paths that no comment of it names: {undocumented}"


def test_the_paths_a_step_reads_come_from_its_job_types_fields():
    assert read_path_options(ImportPersonaPromptOptions) == {"released"}  # its required output is written
    assert read_path_options(FitOptions) == {"persona_prompt"}  # fitted_dir: where fit writes, evaluate reads
    assert read_path_options(BestOfNOptions) == {"judge_file", "requests"}
    assert read_path_options(SelectOptions) == {"human_labels"}  # data and judge_file: what simulate and select write
    assert read_path_options(SimulateOptions) == {"sensebench"}
    assert read_path_options(CupidEvaluate) == {"compiled"}
    assert read_path_options(BuildOptions) == {"problems"}

    class NewOptions(Options):  # a new option is checked without anyone listing it
        profiles: FilePath | None = option(None, "profiles to read")
        output_dir: FilePath = option(Path("runs/new"), "where results go")

    assert read_path_options(NewOptions) == {"profiles"}


@pytest.mark.parametrize("component", COMPONENTS)
def test_no_step_checks_what_it_writes(component):
    for step in COMPONENTS[component].steps.values():
        assert not read_path_options(step.options) & {"output", "output_dir"}


def test_a_missing_path_is_named_with_its_step_key_and_what_the_comments_say(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, """# Download first: the released prompt, to downloads/llama8b.json.
# Another sentence.
name = "t"
component = "synthesizeme"
[steps.import-persona-prompt]
released = "downloads/llama8b.json"  # Ask a colleague for llama8b.json. Or not.
output = "runs/persona.json"
[steps.fit]
persona_prompt = "runs/persona.json"  # what the step above writes
fitted_dir = "runs/fitted"
[steps.evaluate]
fitted_dir = "runs/fitted"
demographics = "survey.parquet"
output_dir = "runs/out"
""")
    released, survey = missing_paths(path, load_experiment(path))
    assert (released.key, released.value) == ("steps.import-persona-prompt.released", "downloads/llama8b.json")
    assert released.comments == ("Download first: the released prompt, to downloads/llama8b.json.",
                                 "Ask a colleague for llama8b.json.")
    assert (survey.key, survey.comments) == ("steps.evaluate.demographics", ())
    with pytest.raises(ConfigError) as caught:
        check_experiment(path)
    assert caught.value.message == (
        f"{path}: steps.import-persona-prompt.released: downloads/llama8b.json: no such file or folder; the file says: "
        '"Download first: the released prompt, to downloads/llama8b.json." / "Ask a colleague for llama8b.json."; '
        "steps.evaluate.demographics: survey.parquet: no such file or folder")
    (tmp_path / "downloads").mkdir()
    (tmp_path / "downloads" / "llama8b.json").write_text("{}")
    (tmp_path / "survey.parquet").write_text("")
    assert check_experiment(path).component == "synthesizeme"


def test_dataset_names_model_uris_and_outputs_are_left_to_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, """name = "t"
component = "cupid"
[steps.compile]
data = "kixlab/CUPID"
output = "runs/inferrer.json"
output_dir = "runs/compile"
[steps.evaluate]
data = "kixlab/CUPID-Unverified"
compiled = "runs/inferrer.json"
[steps.demo]
compiled = "models:/cupid_inferrer@champion"
""")
    assert missing_paths(path, load_experiment(path)) == []


SERVER = 'name = "t"\ncomponent = "cupid"\n[steps.demo]\n[settings.server]\n'


@pytest.mark.parametrize(("server", "missing"), [
    ('backend = "llamacpp"\nmodel = "models/tiny.gguf"', ["settings.server.model"]),
    ('backend = "vllm"\nmodel = "Qwen/Qwen2.5-7B-Instruct"\nexecutable = "vllm"', []),
    ('backend = "vllm"\nmodel = "./weights/qwen"\nexecutable = "/opt/vllm/bin/vllm"',
     ["settings.server.model", "settings.server.executable"]),
])
def test_the_model_servers_files_are_checked_as_its_backends_read_them(tmp_path, monkeypatch, server, missing):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, SERVER + server + "\n")
    assert [problem.key for problem in missing_paths(path, load_experiment(path))] == missing


def test_comments_are_read_outside_strings():
    text = '''# One. Two
# three.
description = """a # in a
multi-line string # too"""
key = "a # in a string"  # After a value.
'''
    assert comment_sentences(text) == ["One.", "Two three.", "After a value."]


def test_check_and_run_stop_on_a_missing_path_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, 'name = "t"\ncomponent = "sensejudge"\n# sense-label1.json: from the SenseJudge '
                           'repository.\n[steps.select]\nhuman_labels = "labels/sense-label1.json"\n')
    monkeypatch.setattr("prefcraft.experiments.running.run_step", lambda *args: pytest.fail("a step ran"))
    for command in ("check", "run"):
        assert main(["experiment", command, str(path), "--tracking-uri", f"sqlite:///{tmp_path}/m.db"][
            :3 if command == "check" else None]) == 2
        error = capsys.readouterr().err
        assert error.startswith(f"prefcraft: error: {path}: steps.select.human_labels: labels/sense-label1.json: no "
                                "such file or folder")
        assert '"sense-label1.json: from the SenseJudge repository."' in error and "hint: paths are relative" in error
