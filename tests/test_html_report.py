"""The HTML report on real MLflow stores that the tests fill run by run, as the commands log them (no model calls)."""

import base64
import io
import re
import time
from contextlib import contextmanager

import mlflow
import pytest
from matplotlib.image import imread
from test_sweeps import GOOD, fake_compile, non_dominated
from toml_files import write

from prefcraft.commands.main import main
from prefcraft.errors import ConfigError
from prefcraft.experiments.sweeps import load_sweep, run_sweep
from prefcraft.html_report import write_report
from prefcraft.html_report.collect import read_store
from prefcraft.report_parts.blocks import EstimateRow
from prefcraft.report_parts.plots import estimate_chart, grouped_bars
from prefcraft.tracking.runs import log_metrics, tracked_run

EXPERIMENT = "prefcraft"


@contextmanager
def logged(name, params=None, metrics=None):
    """A run as `prefcraft.tracking.runs.tracked_run` starts it: nested under the active run, if any."""
    with mlflow.start_run(run_name=name, nested=mlflow.active_run() is not None) as run:
        mlflow.log_params(params or {})
        mlflow.log_metrics(metrics or {})
        yield run
    time.sleep(0.005)  # the report orders runs by start time, in milliseconds


def new_store(path):
    uri = f"sqlite:///{path}/mlflow.db"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(EXPERIMENT)
    return uri


def section(html, anchor):
    return re.search(rf'<section id="{anchor}">(.*?)</section>', html, re.S).group(1)


def decoded_pngs(html):
    return [imread(io.BytesIO(base64.b64decode(data)), format="png")
            for data in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)]


def fill_every_component(uri):
    """One run of each kind of command, with the metric names the commands log."""
    models = {"task_model": "hosted_vllm/SmolLM2-135M-Instruct", "judge_model": "hosted_vllm/SmolLM2-135M-Instruct"}
    with logged("evaluate", {"methods": "default,synthesizeme", "data": "/data/sample_users.jsonl", "split": "test",
                             "users": 2, **models},
                {"baseline_accuracy": 0.5, "baseline_accuracy_ci_low": 0.25, "baseline_accuracy_ci_high": 0.75,
                 "synthesizeme_accuracy": 0.8125, "synthesizeme_accuracy_ci_low": 0.625,
                 "synthesizeme_accuracy_ci_high": 1.0, "baseline_lm_calls": 16, "baseline_prompt_tokens": 4000,
                 "baseline_completion_tokens": 400, "synthesizeme_lm_calls": 16, "synthesizeme_prompt_tokens": 9000,
                 "synthesizeme_completion_tokens": 500}):
        for user, accuracy in (("user_a", 0.375), ("user_b", 0.625)):
            with logged(user, {"user_id": user}, {"baseline_accuracy": accuracy, "synthesizeme_accuracy": 0.8}):
                pass
    with logged("cupid-compile", {"name": "miprov2", "num_candidates": 3, "num_trials": 4, **models},
                {"val_uncompiled": 0.5, "val_compiled": 0.8, "won": 1.0}):
        for step, score in enumerate([50.0, 56.1, 79.8, 56.1]):
            mlflow.log_metric("eval_full", score, step=step)
        with logged("uncompiled-on-val", metrics={"val_score": 0.5, "lm_calls": 6, "prompt_tokens": 600,
                                                  "completion_tokens": 60}):
            pass
    with logged("fit-synthesizeme", {"search": "halving", "num_persona_subsets": 2, "num_demo_candidates": 2}):
        for user, accuracy in (("user_a", 0.5), ("user_b", 0.75)):
            with logged(user, {"user_id": user}, {"val_accuracy": accuracy, "lm_calls": 40}):
                pass
        with pytest.raises(ValueError), logged("too_few"):  # a skipped user's child run
            raise ValueError("fewer than 2 context pairs")
    with logged("cupid-evaluate", {"instances": 3, "inferrers": '["all", "all compiled"]'}):
        for name, f1 in (("all", 0.4), ("all compiled", 0.6)):
            with logged(f"infer-{name}", {"inferrer": name},
                        {"f1": f1, "f1_low": f1 - 0.2, "f1_high": f1 + 0.2, "consistent_f1": f1 - 0.1,
                         "changing_f1": f1 + 0.1, "infer_lm_calls": 3}):
                pass
        with logged("respond-gold", {"response_method": "gold"}, {"score": 7.0}):
            pass
    with logged("lampqa-evaluate", {"questions": 2, "methods": '["baseline", "planpers"]'}):
        for name, score in (("baseline", 0.3), ("planpers", 0.5)):
            with logged(f"lampqa-{name}", {"method": name}, {"score": score, "score_low": score - 0.1,
                                                             "score_high": score + 0.1, "score_Lifestyle": score}):
                pass
    with logged("sensejudge-evaluate", metrics={
            "description_0_accuracy": 0.5, "description_1_accuracy": 0.625, "description_2_accuracy": 0.75,
            "selected_accuracy": 0.875, "selected_accuracy_ci_low": 0.75, "selected_accuracy_ci_high": 1.0}):
        pass
    with logged("prefdisco-evaluate", {"scenarios": 2, "split": "test", **models},
                {"math_baseline_pref_align": 2.0, "math_oracle_pref_align": 3.0, "math_discovery_pref_align": 2.5,
                 "math_discovery_norm_align": 0.5, "math_discovery_norm_align_negative_share": 0.0,
                 "math_discovery_norm_align_undefined": 0, "math_baseline_accuracy": 1.0}):
        for condition in ("baseline", "oracle", "discovery"):
            with logged(condition, {"condition": condition}, {"generation_lm_calls": 2, "generation_prompt_tokens": 100,
                                                               "generation_completion_tokens": 10}):
                pass


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    path = tmp_path_factory.mktemp("full")
    uri = new_store(path)
    fill_every_component(uri)
    output = write_report(uri, EXPERIMENT, path / "report.html", max_runs=50)
    return output.read_text(encoding="utf-8")


def test_every_section_has_a_figure_when_the_store_holds_its_data(full_report):
    for anchor in ("optimizer-trajectories", "baseline-against-personalized", "spread-over-users-and-categories",
                   "prefdisco-prefalign-and-normalign-per-task", "cost"):
        part = section(full_report, anchor)
        assert "<img" in part and 'class="missing"' not in part, anchor
    pngs = decoded_pngs(full_report)
    assert len(pngs) >= 14
    assert all(png.shape[0] > 100 and png.shape[1] > 100 and png.std() > 0 for png in pngs)  # drawn, not blank


def test_the_figures_say_what_the_metrics_say(full_report):
    runs = section(full_report, "runs")
    for name in ("evaluate", "user_a", "cupid-compile", "prefdisco-evaluate"):
        assert name in runs
    assert "miprov2: 3 candidates, 4 trials" in runs and "default, synthesizeme" in runs
    assert "<td>synthesizeme_accuracy</td><td>0.8125</td>" in runs  # what the run logged, listed under the table
    prefdisco = section(full_report, "prefdisco-prefalign-and-normalign-per-task")
    assert "<td>math</td><td>discovery</td><td>2.50</td>" in prefdisco and "<td>50</td>" in prefdisco
    cost = section(full_report, "cost")
    # evaluate's calls are its methods' together, per user; the compile's come from its validation child run.
    assert "<td>32</td><td>13000</td><td>900</td>" in cost and "<td>16.0</td><td>6950</td>" in cost
    assert "<td>uncompiled-on-val</td>" in cost and "<td>baseline, oracle, discovery</td>" in cost


def test_each_component_gets_its_comparison_and_spread(full_report):
    comparisons = section(full_report, "baseline-against-personalized")
    for title in ("evaluate (", "cupid-compile (", "cupid-evaluate (", "lampqa-evaluate (", "sensejudge-evaluate ("):
        assert f'alt="{title}' in comparisons, title
    assert ": preference inference" in comparisons and ": responses" in comparisons
    assert "judge accuracy by description" in comparisons
    spreads = section(full_report, "spread-over-users-and-categories")
    for title in ("per-user accuracy", "validation accuracy per fitted user", "F1 per instance type",
                  "score per category"):
        assert f": {title}" in spreads, title
    runs = section(full_report, "runs")
    assert "<td>too_few (FAILED)</td><td>no metrics</td>" in runs  # a failed child, under its command
    assert "2 (1 not finished)" not in runs and "3 (1 not finished)" in runs


def test_sections_without_data_keep_one_line_and_no_figure(tmp_path):
    uri = new_store(tmp_path)
    with logged("evaluate", {"methods": "baseline"}):
        pass
    html = write_report(uri, EXPERIMENT, tmp_path / "report.html", max_runs=5).read_text()
    assert "<img" not in html
    for anchor in ("optimizer-trajectories", "baseline-against-personalized", "spread-over-users-and-categories",
                   "prefdisco-prefalign-and-normalign-per-task", "cost"):
        assert 'class="missing"' in section(html, anchor), anchor
    assert "No compile logged optimizer evaluations" in html and "No run logged LM usage" in html


def test_a_failed_run_shows_as_failed_with_what_it_logged(tmp_path):
    uri = new_store(tmp_path)
    with pytest.raises(RuntimeError), logged("cupid-compile", {"name": "gepa", "num_candidates": 2, "num_trials": 3}):
        mlflow.log_metric("eval", 62.5)
        mlflow.log_metric("eval", 70.0)
        raise RuntimeError("the server died")
    html = write_report(uri, EXPERIMENT, tmp_path / "report.html", max_runs=5).read_text()
    runs = section(html, "runs")
    assert re.search(r"<tr class=failed><td>cupid-compile</td>.*?<td class=status>FAILED</td>", runs)
    assert re.search(r'<details class="failed" open><summary>cupid-compile \(.*?\): FAILED, 1 metrics', runs)
    assert "<td>eval</td><td>70</td>" in runs
    assert "[FAILED]" in section(html, "optimizer-trajectories")  # its trajectory so far, marked


def test_names_from_the_store_are_escaped(tmp_path):
    uri = new_store(tmp_path)
    with logged('<script>alert("x")</script> & co', {"data": "<i>pairs.jsonl"}):
        pass
    html = write_report(uri, EXPERIMENT, tmp_path / "report.html", max_runs=5).read_text()
    assert "<script>" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co" in html
    assert "&lt;i&gt;pairs.jsonl" in html


def test_the_most_recent_runs_with_everything_under_them(tmp_path):
    uri = new_store(tmp_path)
    for number in range(3):
        with logged(f"experiment:exp{number}"), logged("evaluate"), logged("user_a"):
            pass
    store = read_store(uri, EXPERIMENT, max_runs=2)
    assert [run.name for run in store.runs] == ["experiment:exp2", "experiment:exp1"]
    assert [(depth, run.name) for depth, run in store.command_runs()] == [
        (0, "experiment:exp2"), (1, "evaluate"), (0, "experiment:exp1"), (1, "evaluate")]
    assert store.runs[0].children[0].children[0].name == "user_a"


def test_a_missing_store_is_an_error_and_stays_missing(tmp_path):
    with pytest.raises(ConfigError, match="no MLflow store"):
        read_store(f"sqlite:///{tmp_path}/absent.db", EXPERIMENT, 5)
    assert not (tmp_path / "absent.db").exists()
    uri = new_store(tmp_path)
    with logged("evaluate"):
        pass
    with pytest.raises(ConfigError, match="no experiment named 'other'") as error:
        read_store(uri, "other", 5)
    assert "prefcraft" in error.value.hint


def test_report_command_writes_the_page(tmp_path, capsys):
    uri = new_store(tmp_path)
    with logged("tour", {"components": '["SynthesizeMe"]'}):
        pass
    output = tmp_path / "out" / "report.html"
    assert main(["report", "--tracking-uri", uri, "--output", str(output), "--runs", "3"]) == 0
    assert str(output) in capsys.readouterr().out
    assert "<td>tour</td>" in output.read_text()
    with pytest.raises(SystemExit) as refused:  # argparse checks the flag's bound
        main(["report", "--tracking-uri", uri, "--runs", "0"])
    assert refused.value.code == 2
    assert "--runs: 0 is not at least 1" in capsys.readouterr().err


def logging_compile(calls, fail):
    """The sweep tests' fake compile inside the run `cupid-compile` opens, logging what that run logs: the optimizer's
    settings, DSPy's `eval` per candidate (bootstrap_rs), the validation scores and the LM usage."""
    compile_ = fake_compile(calls, fail)

    def run_command(component, step, args, settings):
        with tracked_run("cupid-compile", {"name": args.optimizer, "num_candidates": args.candidates,
                                           "max_bootstrapped_demos": args.max_bootstrapped_demos}):
            for candidate in range(args.candidates):
                mlflow.log_metric("eval", 40.0 + 5 * candidate)
            outcome = compile_(component, step, args, settings)
            verdict = outcome.verdict
            log_metrics({"val_compiled": verdict.compiled_score, "val_uncompiled": verdict.uncompiled_score,
                         "won": float(verdict.won), **outcome.usage.as_metrics()})
        return outcome

    return run_command


def test_a_sweep_shows_its_trials_and_draws_each_trials_compile(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the sweep's study and MLflow's artifacts
    path = write(tmp_path, GOOD)
    monkeypatch.setattr("prefcraft.experiments.sweeps.run_step",
                        logging_compile([], {1: RuntimeError("the optimizer tripped")}))
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    outcome = run_sweep(path, load_sweep(path), None, {"tracking_uri": uri}, lambda line: None)
    complete = {trial.number: trial for trial in outcome.complete}
    assert outcome.ran == 4 and set(complete) == {0, 2, 3}  # trial 1 failed

    store = read_store(uri, EXPERIMENT, max_runs=5)
    (sweep,) = store.runs
    assert [trial.name for trial in sweep.trials] == [f"trial-{n}" for n in range(4)]
    assert sweep.pareto == [t.number for t in outcome.pareto] and set(sweep.pareto) == non_dominated(complete.values())
    compiles = [run for depth, run in store.command_runs() if depth == 1]
    assert [(run.name, run.status) for run in compiles] == [("cupid-compile", "FAILED" if n == 1 else "FINISHED")
                                                            for n in range(4)]
    for number, run in enumerate(compiles):
        assert run.sweep_trial.startswith(f"sweep:t trial-{number}: ") and run.sweep_trial in run.label
        assert len(run.histories["eval"]) == int(run.params["num_candidates"])
        if number in complete:
            assert f"candidates={complete[number].params['candidates']}" in run.sweep_trial
            assert run.metrics["lm_calls"] == complete[number].values[1]

    html = write_report(uri, EXPERIMENT, tmp_path / "report.html", max_runs=5).read_text()
    sweeps = section(html, "sweeps")
    front = ", ".join(str(t.number) for t in outcome.pareto)
    assert "sweep:t (" in sweeps and f": 4 trials; Pareto front of the study: trials {front}</caption>" in sweeps
    assert ("<th>trial</th><th>candidates</th><th>max_bootstrapped_demos</th><th>task.temperature</th>"
            "<th>score (maximize)</th><th>uncompiled</th><th>gain</th><th>LM calls (minimize)</th>") in sweeps
    for trial in outcome.complete:
        candidates, demos = trial.params["candidates"], trial.params["max_bootstrapped_demos"]
        mark = "*" if trial in outcome.pareto else ""
        assert re.search(rf"<tr><td>{trial.number}</td><td>{candidates}</td><td>{demos}</td><td>[0-9.]+</td>"
                         rf"<td>{trial.values[0]:.4g}</td><td>0.3</td>.*?<td>{trial.values[1]:.0f}</td>.*?"
                         rf"<td class=status>FINISHED</td><td>{re.escape(mark)}</td></tr>", sweeps), trial.number
    assert re.search(r"<tr class=failed><td>1</td>.*?<td class=status>FAILED</td><td></td></tr>", sweeps)
    trajectories = section(html, "optimizer-trajectories")
    for number in range(4):
        assert re.search(rf'alt="cupid-compile \([^"]*, sweep:t trial-{number}: candidates=', trajectories), number
    assert "sweep:t trial-1: " in trajectories.split("[FAILED]")[0]  # the failed trial's compile, marked
    runs = section(html, "runs")
    assert "<td>sweep:t</td><td>sweep</td>" in runs and "cupid compile, 4 trials over candidates" in runs
    assert runs.count("\u21b3 cupid-compile (sweep:t trial-") == 4
    assert section(html, "cost").count("<td>cupid-compile (") == 3  # the failed compile logged no usage


def test_charts_draw_without_intervals_or_points_and_with_gaps():
    rows = [EstimateRow("baseline", 0.5, baseline=True), EstimateRow("method", 0.7, 0.6, 0.8, [0.65, 0.75])]
    for png in (estimate_chart(rows, title="t", axis="a"),
                grouped_bars({"math": {"baseline": 2.0}, "all": {"baseline": 2.5, "oracle": 3.0}}, title="t",
                             ylabel="y")):
        image = imread(io.BytesIO(png), format="png")
        assert image.ndim == 3 and image.std() > 0
