"""Experiment files: the shipped ones validate, a bad one fails naming file and key, a step runs what its command line
would, settings layer as documented, and the runner runs the steps in order under one parent run. No model calls."""

import re
from pathlib import Path

import mlflow
import pytest
from toml_files import write

from prefcraft.commands.main import main, make_parser
from prefcraft.errors import ConfigError, DataError
from prefcraft.experiments.files import check_experiment, experiment_settings, load_experiment, missing_paths
from prefcraft.experiments.running import run_experiment
from prefcraft.flags import settings_flag_names
from prefcraft.options import options_from_args
from prefcraft.registry import COMPONENTS
from prefcraft.settings import Settings

EXPERIMENTS = Path(__file__).parents[1] / "experiments"
SETTINGS_FILES = {"embedded.toml", "vllm-qwen7b.toml"}  # --config settings files, not experiments
SHIPPED = sorted(path for path in EXPERIMENTS.glob("*.toml") if path.name not in SETTINGS_FILES)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.name)
def test_every_shipped_experiment_validates(path):
    experiment = load_experiment(path)
    assert experiment.name == path.stem and experiment.description
    assert [step.name for step in experiment.commands()] == list(experiment.steps)


def test_each_component_ships_its_paper_experiment_and_a_small_twin():
    components = {load_experiment(path).component: path.stem for path in SHIPPED if not path.stem.endswith("-small")}
    assert sorted(components) == sorted(COMPONENTS)
    for stem in components.values():
        paper = load_experiment(EXPERIMENTS / f"{stem}.toml")
        small = load_experiment(EXPERIMENTS / f"{stem}-small.toml")
        assert list(small.steps) == list(paper.steps)
        assert paper.settings.serve is False and paper.settings.task.api_base  # a vLLM server of the user's
        assert small.settings.model_dump(exclude_unset=True) == {  # the embedded model
            "task": {"timeout_s": 600.0}, "small_model": {"enabled": True}}


def test_the_readme_example_is_a_valid_experiment(tmp_path):
    readme = (EXPERIMENTS / "README.md").read_text(encoding="utf-8")
    (example,) = [block for block in re.findall(r"```toml\n(.*?)```", readme, re.S) if "[steps." in block]
    experiment = load_experiment(write(tmp_path, example))
    assert experiment.component == "cupid" and experiment.steps["evaluate"]["no_shipped"] is True


def test_a_step_runs_what_its_command_line_would(tmp_path):
    path = write(tmp_path, """
name = "t"
component = "cupid"
[steps.evaluate]
max_instances = 2
inferrers = ["all", "relevant"]
responses = []
no_shipped = true
output_dir = "out"
""")
    (step,) = load_experiment(path).commands()
    argv = ["cupid", "evaluate", "--max-instances", "2", "--inferrers", "all", "relevant", "--responses",
            "--no-shipped", "--output-dir", "out"]
    assert step.options == options_from_args(type(step.options), make_parser().parse_args(argv))
    assert step.options.output_dir == Path("out")  # relative: resolved against the current directory when it runs
    assert str(step) == ("prefcraft cupid evaluate (max_instances=2, inferrers=['all', 'relevant'], responses=[], "
                         "no_shipped=True, output_dir=out)")


def test_synthesizeme_steps_are_its_commands_and_take_their_job_types_defaults(tmp_path):
    path = write(tmp_path, """
name = "t"
component = "synthesizeme"
[steps.compile-persona]
train_users = ["a", "b"]
val_users = ["c"]
output = "persona.json"
[steps.demo]
""")
    persona, demo = load_experiment(path).commands()
    assert (persona.component, persona.name) == ("synthesizeme", "compile-persona")
    assert str(persona).startswith("prefcraft synthesizeme compile-persona (train_users=['a', 'b']")
    options = persona.options
    assert (options.train_users, options.candidates, options.optimizer) == (["a", "b"], 20, "miprov2")
    assert (demo.name, demo.options.subsets) == ("demo", 2)  # the demo's own default


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_step_of_every_component_can_be_configured(component):
    for step in COMPONENTS[component].steps.values():
        fields = step.options.model_fields
        assert fields and not set(fields) & settings_flag_names()


BAD = {
    "unknown key": ('name = "t"\ncomponent = "cupid"\nowner = "me"\n[steps.demo]\n', "owner: unknown key"),
    "unknown settings key": ('name = "t"\ncomponent = "cupid"\n[settings.task]\nmodle = "x"\n[steps.demo]\n',
                             "settings.task.modle: unknown key"),
    "unknown option": ('name = "t"\ncomponent = "cupid"\n[steps.compile]\ncandidatez = 2\n',
                       "steps.compile.candidatez: unknown option of 'prefcraft cupid compile'"),
    "a settings flag as an option": ('name = "t"\ncomponent = "cupid"\n[steps.demo]\ntask_model = "x"\n',
                                     "steps.demo.task_model: a settings flag, not an option of 'prefcraft cupid "
                                     "demo': set it in the [settings] tables"),
    "wrong type": ('name = "t"\ncomponent = "cupid"\n[steps.evaluate]\nmax_instances = "3"\n',
                   "steps.evaluate.max_instances: Input should be a valid integer"),
    "a number for a switch": ('name = "t"\ncomponent = "cupid"\n[steps.evaluate]\nno_shipped = 0\n',
                              "steps.evaluate.no_shipped: Input should be a valid boolean"),
    # a former name (variants, now inferrers) is named as the file wrote it
    "bad choice": ('name = "t"\ncomponent = "cupid"\n[steps.evaluate]\nvariants = ["all", "everything"]\n',
                   "steps.evaluate.variants[1]: Input should be 'relevant', 'summaries', 'summaries-per-session' "
                   "or 'all'"),
    "empty list for a one-or-more flag": ('name = "t"\ncomponent = "cupid"\n[steps.evaluate]\nvariants = []\n',
                                          "steps.evaluate.variants: List should have at least 1 item"),
    "missing required option": ('name = "t"\ncomponent = "sensejudge"\n[steps.simulate]\n[steps.select]\n',
                                "steps.simulate.sensebench: required option of 'prefcraft sensejudge simulate' is "
                                "missing"),
    "missing required option of a SynthesizeMe step": (
        'name = "t"\ncomponent = "synthesizeme"\n[steps.compile-persona]\nval_users = ["a"]\noutput = "p.json"\n',
        "steps.compile-persona.train_users: required option of 'prefcraft synthesizeme compile-persona' is missing"),
    "TOML syntax error": ('name = "t"\ncomponent = \n', "not valid TOML: Invalid value (at line 2"),
    "unknown component": ('name = "t"\ncomponent = "tour"\n[steps.demo]\n',
                          "component: Input should be 'synthesizeme', 'sensejudge', 'prefdisco', 'cupid' or 'lampqa'"),
    "unknown step": ('name = "t"\ncomponent = "lampqa"\n[steps.compil]\n',
                     "steps.compil: not a step of lampqa (its steps: compile, evaluate, demo)"),
    "a step that is not a table": ('name = "t"\ncomponent = "lampqa"\nsteps = { evaluate = 3 }\n',
                                   "steps.evaluate: Input should be a valid dictionary"),
    "no steps": ('name = "t"\ncomponent = "lampqa"\nsteps = {}\n', "steps: Dictionary should have at least 1 item"),
    "no name": ('component = "lampqa"\n[steps.demo]\n', "name: missing"),
    "a data file that does not exist": (
        'name = "t"\ncomponent = "cupid"\n[steps.evaluate]\ndata = "/nonexistent/file.jsonl"\n',
        "steps.evaluate.data: /nonexistent/file.jsonl: no such file or folder"),
    "a relative data file that does not exist": (
        'name = "t"\ncomponent = "synthesizeme"\n[steps.evaluate]\ndata = "pairs.jsonl"\n',
        "steps.evaluate.data: pairs.jsonl: no such file or folder"),
    "a malformed dataset name": ('name = "t"\ncomponent = "cupid"\n[steps.evaluate]\ndata = "kixlab CUPID"\n',
                                 "steps.evaluate.data: 'kixlab CUPID' is neither a local file nor a Hugging Face "
                                 "dataset name"),
    "a demographics file that does not exist": (
        'name = "t"\ncomponent = "synthesizeme"\n[steps.evaluate]\ndemographics = "survey.parquet"\n',
        "steps.evaluate.demographics: survey.parquet: no such file or folder"),
}


def test_data_may_be_a_dataset_name_an_existing_file_or_what_an_earlier_step_writes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pairs.jsonl").write_text("")
    for data in ("kixlab/CUPID", "squad", "pairs.jsonl", str(tmp_path / "pairs.jsonl")):
        check_experiment(write(tmp_path, f'name = "t"\ncomponent = "cupid"\n[steps.evaluate]\ndata = "{data}"\n'))
    check_experiment(write(tmp_path, 'name = "t"\ncomponent = "prefdisco"\n[steps.build-scenarios]\n'
                                     'output = "runs/s.jsonl"\n[steps.evaluate]\ndata = "runs/s.jsonl"\n'))


@pytest.mark.parametrize("case", BAD)
def test_a_bad_file_is_one_error_naming_file_and_key(tmp_path, case):
    text, expected = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        check_experiment(path)
    assert caught.value.message.startswith(f"{path}: ") and expected in caught.value.message
    assert "\n" not in caught.value.message


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    path = write(tmp_path, 'name = "t"\ncomponent = "cupid"\n[settings]\nseeds = 1\n[steps.evaluate]\nsplit = "dev"\n'
                           '[steps.compile]\ntrials = 1.5\n')
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    problems = caught.value.message.removeprefix(f"{path}: ").split("; ")
    assert [problem.split(":")[0] for problem in problems] == ["settings.seeds", "steps.evaluate.split",
                                                               "steps.compile.trials"]
    assert "prefcraft <component> <step> --help" in caught.value.hint


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match=re.escape(f"{tmp_path / 'nope.toml'}: no such experiment file")):
        load_experiment(tmp_path / "nope.toml")


def complete(paths):
    """The experiment files among `paths` whose every local path exists here (the others name downloads)."""
    return [path for path in paths if not missing_paths(path, load_experiment(path))]


def test_check_reports_every_file_and_fails_cleanly(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(EXPERIMENTS.parent)
    good = EXPERIMENTS / "cupid-main-small.toml"
    bad = write(tmp_path, 'name = "t"\ncomponent = "cupid"\n[steps.compile]\ncandidatez = 2\n')
    assert main(["experiment", "check", str(good), str(bad)]) == 2
    captured = capsys.readouterr()
    assert f"{good}: ok (cupid: evaluate)" in captured.out
    error = captured.err.splitlines()
    assert error[0] == f"prefcraft: error: {bad}: steps.compile.candidatez: unknown option of 'prefcraft cupid compile'"
    assert error[1].startswith("  hint: ") and "Traceback" not in captured.err
    assert main(["experiment", "check", *map(str, complete(SHIPPED))]) == 0


def test_check_of_the_whole_folder_names_and_skips_the_settings_files(capsys, monkeypatch):
    monkeypatch.chdir(EXPERIMENTS.parent)
    files = sorted(EXPERIMENTS.glob("*.toml"))
    assert main(["experiment", "check", *map(str, files)]) == (0 if complete(SHIPPED) == SHIPPED else 2)
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert sorted(line for line in lines if line.endswith(": settings file, skipped")) == [
        f"{EXPERIMENTS / name}: settings file, skipped" for name in sorted(SETTINGS_FILES)]
    assert len([line for line in lines if ": ok (" in line]) == len(complete(SHIPPED))
    for path in sorted(set(SHIPPED) - set(complete(SHIPPED))):  # each file that lacks a download: one error line
        assert f"{path}: steps." in captured.err


def test_a_file_with_settings_and_an_experiment_key_is_checked_as_an_experiment(tmp_path, capsys):
    mixed = write(tmp_path, 'component = "cupid"\nthreads = 2\n')
    assert main(["experiment", "check", str(mixed)]) == 2
    assert "name: missing" in capsys.readouterr().err


def test_settings_layer_environment_then_file_then_flags(tmp_path, monkeypatch):
    path = write(tmp_path, """
name = "t"
component = "cupid"
[settings]
threads = 3
[settings.task]
model = "hosted_vllm/from-the-file"
max_tokens = 99
[steps.demo]
""")
    monkeypatch.setenv("PREFCRAFT_TASK__MODEL", "hosted_vllm/from-the-environment")
    monkeypatch.setenv("PREFCRAFT_SEED", "7")
    experiment = load_experiment(path)
    settings = experiment_settings(experiment, None, {"task": {"api_base": "http://flag/v1"}, "threads": 5})
    assert settings.task.model == "hosted_vllm/from-the-file"  # the file over the environment
    assert (settings.task.api_base, settings.task.max_tokens) == ("http://flag/v1", 99)  # a flag keeps the rest
    assert (settings.threads, settings.seed) == (5, 7)  # flags over the file; the environment where it is silent
    config = write(tmp_path, 'serve = false\n[task]\nmodel = "hosted_vllm/base"\ntemperature = 0.5\n', "base.toml")
    layered = experiment_settings(experiment, config, {})
    assert (layered.serve, layered.task.temperature, layered.task.model) == (False, 0.5, "hosted_vllm/from-the-file")


def test_the_runner_runs_the_steps_in_order_and_a_failure_stops_the_experiment(tmp_path, monkeypatch):
    """`run_command` is replaced: the steps' arguments arrive in file order; the third never runs."""
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, """
name = "ordered"
component = "prefdisco"
[steps.build-scenarios]
personas = 3
[steps.compile]
trials = 1
[steps.evaluate]
""")
    called = []

    def run_command(component, step, options, settings):
        called.append((step, settings.threads))
        if step == "compile":
            raise DataError("scenarios.jsonl", 0, "persona", "broken")
        return step

    monkeypatch.setattr("prefcraft.experiments.running.run_step", run_command)
    settings = Settings(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db", threads=2)
    with pytest.raises(DataError):
        run_experiment(path, load_experiment(path), settings, lambda line: None)
    assert called == [("build-scenarios", 2), ("compile", 2)]

    mlflow.set_tracking_uri(settings.tracking_uri)
    (run,) = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list")
    assert run.info.run_name == "experiment:ordered" and run.info.status == "FAILED"
    assert run.data.params["component"] == "prefdisco" and len(run.data.params["config_digest"]) == 16
    assert run.data.params["steps"] == '["build-scenarios", "compile", "evaluate"]'
    assert run.data.metrics["build_scenarios_lm_calls"] == 0 and "compile_lm_calls" not in run.data.metrics
    assert {artifact.path for artifact in mlflow.MlflowClient().list_artifacts(run.info.run_id)} == {
        "x.toml", "steps.json"}
