"""Sweep files: the shipped ones validate, a bad one fails naming file and key; a sweep runs its trials as nested MLflow
runs in a real Optuna storage, resumes from it, reports the Pareto front, and fails a trial or stops as its error says.
The compile is a fake whose score and LM calls follow the suggested options: no model calls."""

import json
from pathlib import Path

import mlflow
import optuna
import pytest
from optuna.trial import TrialState
from toml_files import write

from prefcraft.commands.main import main
from prefcraft.engine.usage import LMUsage
from prefcraft.errors import ConfigError, ServerUnreachableError
from prefcraft.experiments.sweeps import load_sweep, run_sweep
from prefcraft.optimizers.compile_selection import CompileOutcome, CompileVerdict

SWEEPS = sorted((Path(__file__).parents[1] / "experiments" / "sweeps").glob("*.toml"))
GOOD = """
name = "t"
component = "cupid"
step = "compile"
[options]
optimizer = "bootstrap_rs"
[search]
candidates = { type = "int", low = 1, high = 6 }
max_bootstrapped_demos = { type = "int", low = 0, high = 4 }
task.temperature = { type = "float", low = 0.0, high = 1.0 }
[study]
n_trials = 4
"""


@pytest.mark.parametrize("path", SWEEPS, ids=lambda path: path.name)
def test_every_shipped_sweep_validates(path):
    sweep = load_sweep(path)
    assert sweep.name == path.stem and sweep.description and sweep.step == "compile"
    assert main(["sweep", "check", str(path)]) == 0


def test_a_good_file_loads_with_the_defaults(tmp_path):
    sweep = load_sweep(write(tmp_path, GOOD))
    assert list(sweep.search) == ["candidates", "max_bootstrapped_demos", "task.temperature"]  # dotted or quoted
    assert sweep.study.directions == ["maximize score", "minimize lm_calls"]
    assert sweep.storage == "sqlite:///runs/sweeps/t/optuna.db" and sweep.options == {"optimizer": "bootstrap_rs"}


BAD = {
    "unknown search parameter": (GOOD.replace("candidates =", "candidatez ="),
                                 "search.candidatez: unknown option of 'prefcraft cupid compile'"),
    "low above high": (GOOD.replace("low = 1, high = 6", "low = 6, high = 1"),
                       "search.candidates: Value error, low (6) is above high (1)"),
    "a float range for an int option": (GOOD.replace('"int", low = 1, high = 6', '"float", low = 0.5, high = 6.0'),
                                        "search.candidates: Input should be a valid integer"),
    "a choice the option does not take": (GOOD.replace('optimizer = "bootstrap_rs"', "").replace(
        "[search]", '[search]\noptimizer = { type = "categorical", choices = ["miprov2", "sgd"] }'),
        "search.optimizer: Input should be 'miprov2', 'gepa' or 'bootstrap_rs'"),
    "a count below the flag's own bound": (GOOD.replace("low = 1, high = 6", "low = 0, high = 6"),
                                           "search.candidates: Input should be greater than or equal to 1"),
    "a temperature no model takes": (GOOD.replace("low = 0.0, high = 1.0", "low = 0.0, high = 7.0"),
                                     "search.task.temperature: Input should be less than or equal to 2"),
    "a negative temperature": (GOOD.replace("low = 0.0, high = 1.0", "low = -1.0, high = 1.0"),
                               "search.task.temperature: Input should be greater than or equal to 0"),
    "a path the sweep sets": (GOOD.replace("[options]", '[options]\noutput = "compiled/x.json"'),
                              "options.output: set by the sweep, per trial"),
    "a non-compile step": (GOOD.replace('step = "compile"', 'step = "evaluate"'), "step: Input should be 'compile'"),
    "a component without a compile outcome": (GOOD.replace('"cupid"', '"synthesizeme"'), "component: Input should be"),
    "an unknown objective": (GOOD.replace("n_trials = 4", 'n_trials = 4\ndirections = ["maximize score", "minimize '
                                          'cost"]'),
                             "study.directions[1]: Value error, 'minimize cost' is not"),
    "a bad option": (GOOD.replace('"bootstrap_rs"', '"sgd"'), "options.optimizer: Input should be 'miprov2'"),
    "no study": (GOOD.split("[study]")[0], "study: missing"),
    "a name that leaves runs/sweeps/": (GOOD.replace('name = "t"', 'name = ".."'), "name: String should match"),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_file_is_one_error_naming_file_and_key(tmp_path, case):
    text, expected = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_sweep(path)
    assert caught.value.message.startswith(f"{path}: ") and expected in caught.value.message
    assert "\n" not in caught.value.message


def fake_compile(calls: list, fail: dict | None = None):
    """A compile whose score and LM calls follow the options: demos and candidates cost calls and buy score."""

    def run_command(component, step, args, settings):
        assert (component, step) == ("cupid", "compile") and args.optimizer == "bootstrap_rs"
        assert args.output_dir.parts[:3] == ("runs", "sweeps", "t") and args.output.parent == args.output_dir
        calls.append((args.candidates, args.max_bootstrapped_demos, settings.task.temperature))
        error = (fail or {}).get(len(calls) - 1)
        if error:
            raise error
        score = 0.1 * args.max_bootstrapped_demos + 0.02 * args.candidates - 0.05 * settings.task.temperature
        verdict = CompileVerdict(0.3, score, True, args.output, False)
        usage = LMUsage(10 * args.candidates + 7 * args.max_bootstrapped_demos + 1, 100, 10)
        return CompileOutcome(6, 6, verdict, usage, args.optimizer)

    return run_command


def non_dominated(trials):
    """By hand: maximize score, minimize lm_calls."""
    def dominates(a, b):
        return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])
    return {t.number for t in trials if not any(dominates(o.values, t.values) for o in trials if o is not t)}


def sweep_runs(tracking_uri):
    mlflow.set_tracking_uri(tracking_uri)
    runs = mlflow.search_runs(experiment_names=["prefcraft"], output_format="list")
    parents = [run for run in runs if run.info.run_name == "sweep:t"]
    children = {parent.info.run_id: [run for run in runs if run.data.tags.get("mlflow.parentRunId") == run_id]
                for parent in parents for run_id in [parent.info.run_id]}
    return parents, children


def test_a_sweep_runs_resumes_and_reports_its_pareto_front(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, GOOD)
    calls: list = []
    monkeypatch.setattr("prefcraft.experiments.sweeps.run_step", fake_compile(calls))
    overrides = {"tracking_uri": f"sqlite:///{tmp_path}/mlflow.db"}
    lines: list[str] = []

    outcome = run_sweep(path, load_sweep(path), None, overrides, lines.append)
    assert outcome.ran == 4 and len(outcome.complete) == 4 and len(calls) == 4
    assert {t.number for t in outcome.pareto} == non_dominated(outcome.complete)
    report = json.loads((tmp_path / "runs/sweeps/t/pareto.json").read_text())
    assert [entry["trial"] for entry in report["pareto"]] == [t.number for t in outcome.pareto]
    assert set(report["pareto"][0]["objectives"]) == {"score", "lm_calls"}
    assert "Pareto front (maximize score, minimize lm_calls): trials" in lines[-1]
    for trial in outcome.complete:  # the fake's own numbers, through the trial's suggested values
        candidates, demos = trial.params["candidates"], trial.params["max_bootstrapped_demos"]
        assert trial.values[1] == 10 * candidates + 7 * demos + 1
        assert trial.user_attrs["uncompiled_score"] == 0.3 and trial.user_attrs["compiled_score"] == trial.values[0]
    assert {(c, d, t) for c, d, t in calls} == {(t.params["candidates"], t.params["max_bootstrapped_demos"],
                                                 t.params["task.temperature"]) for t in outcome.complete}

    (parent,), children = sweep_runs(overrides["tracking_uri"])
    assert parent.info.status == "FINISHED" and parent.data.params["study_name"] == "t"
    assert parent.data.params["storage"] == "sqlite:///runs/sweeps/t/optuna.db"
    trials = {run.info.run_name: run for run in children[parent.info.run_id]}
    assert set(trials) == {f"trial-{t.number}" for t in outcome.complete}
    for trial in outcome.complete:
        run = trials[f"trial-{trial.number}"]
        assert run.data.params["candidates"] == str(trial.params["candidates"])
        assert (run.data.metrics["score"], run.data.metrics["lm_calls"]) == tuple(trial.values)
    assert "pareto.json" in {a.path for a in mlflow.MlflowClient().list_artifacts(parent.info.run_id)}

    again = run_sweep(path, load_sweep(path), None, overrides, lines.append)
    assert again.ran == 0 and len(calls) == 4 and len(again.complete) == 4

    # A trial left RUNNING by a process that died is not counted: raising n_trials by 2 runs 2.
    optuna.load_study(study_name="t", storage="sqlite:///runs/sweeps/t/optuna.db").ask()
    path.write_text(GOOD.replace("n_trials = 4", "n_trials = 6"), encoding="utf-8")
    more = run_sweep(path, load_sweep(path), None, overrides, lines.append)
    assert more.ran == 2 and len(calls) == 6 and len(more.complete) == 6
    assert {t.number for t in more.pareto} == non_dominated(more.complete)
    parents, children = sweep_runs(overrides["tracking_uri"])
    assert len(parents) == 3 and sorted(len(runs) for runs in children.values()) == [0, 2, 4]


def test_a_failing_trial_is_failed_and_a_server_error_stops_the_sweep(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, GOOD)
    calls: list = []
    fail = {1: RuntimeError("the optimizer tripped"), 3: ServerUnreachableError("http://x/v1", "refused")}
    monkeypatch.setattr("prefcraft.experiments.sweeps.run_step", fake_compile(calls, fail))
    overrides = {"tracking_uri": f"sqlite:///{tmp_path}/mlflow.db"}

    with pytest.raises(ServerUnreachableError):
        run_sweep(path, load_sweep(path), None, overrides, lambda line: None)
    assert len(calls) == 4  # the RuntimeError did not stop it; the server error did
    study = optuna.load_study(study_name="t", storage="sqlite:///runs/sweeps/t/optuna.db")
    assert [trial.state for trial in study.trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE,
                                                       TrialState.FAIL]
    (parent,), children = sweep_runs(overrides["tracking_uri"])
    assert parent.info.status == "FAILED"
    assert {run.info.run_name: run.info.status for run in children[parent.info.run_id]} == {
        "trial-0": "FINISHED", "trial-1": "FAILED", "trial-2": "FINISHED", "trial-3": "FAILED"}

    resumed = run_sweep(path, load_sweep(path), None, overrides, lambda line: None)  # the server is back
    assert resumed.ran == 2 and [t.number for t in resumed.complete] == [0, 2, 4, 5]
