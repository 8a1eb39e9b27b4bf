"""Faults in the components' commands (CUPID, LaMP-QA, PrefDisco) and a compile, as tests/test_faults.py checks
SynthesizeMe's: the real embedded server behind a proxy that dies after N answers or cuts every reply in half.

A dead server ends the command with one line naming it (exit 2, no traceback), the MLflow run FAILED, nothing
half-written, and the same command again repeats no LM call that had been answered (DSPy's cache holds them).
Unparseable replies are counted failures, never silent zeros, and the run finishes.
"""

import json

import dspy
import pytest
from fault_commands import assert_one_unreachable_line, child_runs, flags, parent_runs
from fault_proxy import fault_proxy

from prefcraft.backends import free_port
from prefcraft.commands.main import main
from prefcraft.engine.evaluation import evaluate_program
from prefcraft.errors import ServerUnreachableError
from prefcraft.optimizers import artifacts
from prefcraft.optimizers.compile_gate import keep_if_better
from prefcraft.settings import ModelSettings, Settings
from prefcraft.tracking.runs import MLflowTracker, StepTracker, start_tracking, tracked_run

CUPID_EVALUATE = ["cupid", "evaluate", "--max-instances", "1", "--no-shipped", "--responses", "gold"]
LAMPQA_EVALUATE = ["lampqa", "evaluate", "--categories", "Lifestyle_and_Personal_Development", "--max-questions", "1",
                   "--k", "3", "--methods", "baseline", "planpers", "--no-shipped"]
PREFDISCO_EVALUATE = ["prefdisco", "evaluate", "--max-scenarios", "1", "--max-turns", "1", "--forced-questions", "1",
                      "--no-shipped"]


class Echo(dspy.Module):
    """A program that answers without a model, as DSPy's cache answers a call made before."""

    def forward(self, question: str) -> dspy.Prediction:
        return dspy.Prediction(answer=question)


def run_until_the_server_dies(command, proxy, tmp_path, capsys):
    """`command` through `proxy`, which dies on the way: exit 2 and one line naming it, the MLflow run FAILED.
    Returns the requests answered whole before the death (a reply ended at max_tokens is never cached, so the rerun
    asks it again)."""
    assert main([*command, *flags(tmp_path, proxy.base_url)]) == 2
    assert_one_unreachable_line(capsys.readouterr().err, proxy.base_url)
    assert [run.info.status for run in parent_runs(tmp_path)] == ["FAILED"]
    assert len(proxy.answered) >= proxy.die_after
    return [body for body in proxy.answered if body not in proxy.cut_short]


def rerun_healed(command, proxy, tmp_path, before):
    """The same command once the server answers again: it finishes and sends none of the requests in `before`.
    Returns the requests it sent."""
    proxy.heal()
    proxy.answered.clear()
    assert main([*command, *flags(tmp_path, proxy.base_url)]) == 0
    assert not set(before) & set(proxy.answered), "a completed call was sent again"
    assert [run.info.status for run in parent_runs(tmp_path)] == ["FAILED", "FINISHED"]
    return list(proxy.answered)


@pytest.mark.server
def test_a_server_dying_mid_compile_writes_nothing_and_the_rerun_repeats_no_completed_call(
    embedded_server, tmp_path, capsys, monkeypatch
):
    """MIPROv2 over CUPID's inferrer, 1 train and 1 validation instance: 4 calls bootstrap the demo (inferrer, then
    the metric's decomposer and two matchers), 2 summarise the data; the server dies while instructions are proposed.
    The output is inside a compiled package, where a winner would be registered in its index."""
    monkeypatch.chdir(tmp_path)  # MLflow's artifacts
    package = tmp_path / "compiled"
    package.mkdir()
    index = package / "index.json"
    index.write_text("{}\n")
    monkeypatch.setattr(artifacts, "COMPILED_DIR", package)
    monkeypatch.setattr(artifacts, "COMPILED_INDEX", index)
    output, runs = package / "cupid_inferrer" / "smollm2.json", tmp_path / "runs"
    command = ["cupid", "compile", "--max-instances", "1", "--candidates", "2", "--trials", "1",
               "--max-bootstrapped-demos", "1", "--max-labeled-demos", "0", "--output", str(output),
               "--output-dir", str(runs)]
    with fault_proxy(embedded_server.base_url, die_after=8) as proxy:
        before = run_until_the_server_dies(command, proxy, tmp_path, capsys)
        assert [path.name for path in package.rglob("*")] == ["index.json"] and index.read_text() == "{}\n"
        assert not runs.exists()
        rerun_healed(command, proxy, tmp_path, before)
    assert output.is_file()  # saved, won or lost; registered only when it won
    assert (json.loads(index.read_text()) != {}) == json.loads(output.read_text())["prefcraft"]["won"]


def test_a_compile_is_not_saved_when_a_server_stopped_answering_even_if_the_cache_answers_its_validation(tmp_path):
    """MIPROv2 scores a failed call as 0 and goes on: after a server died in its last trial, the validation of
    `keep_if_better` can come from the cache alone. Nothing is saved on a dead server."""
    session = Settings().with_api_base(f"http://127.0.0.1:{free_port()}/v1")
    valset = [dspy.Example(question="q").with_inputs("question")]
    with pytest.raises(ServerUnreachableError):
        keep_if_better(session, StepTracker(MLflowTracker()), compiled=Echo(), uncompiled=Echo(), valset=valset,
                       score=lambda example, prediction: 1.0, program_name="program",
                       output=tmp_path / "program.json")
    assert not list(tmp_path.iterdir())


@pytest.mark.server
def test_cupid_evaluate_with_a_server_dying_mid_matching(embedded_server, tmp_path, capsys, monkeypatch):
    """1 instance: inference, the matcher's decomposer and two matchers, a gold response and its judgment (6 calls);
    the server dies after the decomposer."""
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    command = [*CUPID_EVALUATE, "--output-dir", str(results)]
    with fault_proxy(embedded_server.base_url, die_after=3) as proxy:
        before = run_until_the_server_dies(command, proxy, tmp_path, capsys)
        assert not results.exists()  # written once every step is done; the cache holds what was answered
        rerun_healed(command, proxy, tmp_path, before)
    [inferred] = [json.loads(line) for line in (results / "inference-all.jsonl").read_text().splitlines()]
    [response] = [json.loads(line) for line in (results / "responses.jsonl").read_text().splitlines()]
    assert inferred["failed"] is None and response["score"] is not None


@pytest.mark.server
def test_lampqa_evaluate_with_a_server_dying_in_a_partly_judged_last_step(
    embedded_server, tmp_path, capsys, monkeypatch
):
    """1 question with 4 gold aspects: none (answer, 4 judgments), PlanPers (planner, answer, 4 judgments, then its
    plan's coverage: 4 judgments); the server dies after the first two coverage judgments. AspectJudge goes on past a
    failed aspect, so this last step is only partly failed: it must still name the server, not count its silence."""
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    command = [*LAMPQA_EVALUATE, "--output-dir", str(results)]
    with fault_proxy(embedded_server.base_url, die_after=13) as proxy:
        before = run_until_the_server_dies(command, proxy, tmp_path, capsys)
        assert sorted(path.name for path in results.iterdir()) == ["lampqa-baseline.jsonl"]  # the method that was done
        after = rerun_healed(command, proxy, tmp_path, before)
    assert len(set(before) | set(after)) == 15
    summary = json.loads((results / "lampqa-summary.json").read_text())
    assert all(method["failed_judgments"] == 0 and method["cost"]["judge"]["failures"] == 0
               for method in summary["methods"].values())
    assert summary["methods"]["planpers"]["cost"]["coverage"]["failures"] == 0


@pytest.mark.server
def test_prefdisco_evaluate_with_a_server_dying_in_the_simulated_users_reply(
    embedded_server, tmp_path, capsys, monkeypatch
):
    """1 scenario with 2 criteria: Baseline and Oracle (an answer, 2 grades, a correctness check each), then the
    asker's first turn; the server dies before the simulated user (the judge model, inside the asker) replies."""
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    command = [*PREFDISCO_EVALUATE, "--output-dir", str(results)]
    with fault_proxy(embedded_server.base_url, die_after=9) as proxy:
        before = run_until_the_server_dies(command, proxy, tmp_path, capsys)
        assert not results.exists()
        rerun_healed(command, proxy, tmp_path, before)
    rows = [json.loads(line) for line in (results / "dialogues.jsonl").read_text().splitlines()]
    assert [row["failed"] for row in rows] == [None] * 3 and len(rows[2]["turns"]) == 1


@pytest.mark.server
def test_prefdisco_evaluate_counts_truncated_replies_as_failures_not_scores(
    embedded_server, tmp_path, capsys, monkeypatch
):
    """Every reply cut in half: no condition's answer parses. Each failure is counted in the printed report and in
    MLflow; no PrefAlign, accuracy or question count is reported for the dialogues that failed, and the run ends,
    its exit status 1: items failed."""
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    with fault_proxy(embedded_server.base_url, "truncate") as proxy:
        assert main([*PREFDISCO_EVALUATE, "--output-dir", str(results), *flags(tmp_path, proxy.base_url)]) == 1
    captured = capsys.readouterr()
    out = captured.out
    assert "prefcraft: 3 item(s) failed and were counted" in captured.err
    table = [line.split() for line in out.splitlines() if line.startswith("math ")]
    # the last two columns: failed dialogues, missing grades
    assert [(row[1], row[2], row[-2], row[-1]) for row in table] == [("baseline", "-", "1", "0"),
                                                                     ("oracle", "-", "1", "0"),
                                                                     ("discovery", "-", "1", "0")]
    # Two identical requests per answering dialogue reach the server: the unparseable reply leaves the cache before the
    # call is made again within the run, so the second attempt is not answered from the cache. The fixed-count asker's
    # one request is cut in half to an empty question, which fails its dialogue at once.
    assert out.count("generation 2.0 calls") == 2 and out.count("generation 1.0 calls") == 1
    assert out.count(", 1 failed, 0 degenerate;") == 3
    [parent] = parent_runs(tmp_path)
    assert parent.info.status == "FINISHED"
    assert not [name for name in parent.data.metrics if name.endswith(("pref_align", "accuracy", "questions"))]
    failures = {run.info.run_name: run.data.metrics.get("generation_failures") for run in child_runs(tmp_path, parent)}
    assert failures == {"baseline": 1.0, "oracle": 1.0, "discovery": 1.0}
    rows = [json.loads(line) for line in (results / "dialogues.jsonl").read_text().splitlines()]
    assert [(row["failed"], row["pref_align"]) for row in rows] == [("generation", None)] * 3


def test_a_metric_whose_own_model_call_fails_is_a_counted_failure_under_mlflow_autologging(tmp_path, monkeypatch):
    """The compile metrics call a judge (`keep_if_better` scores with them through `evaluate_program`): a judge reply
    that does not parse must fail that example, not the whole evaluation with a TypeError from inside DSPy."""

    def judged(example: dspy.Example, prediction: dspy.Prediction) -> float:
        if example.question == "unparseable":
            raise ValueError("the judge's reply could not be parsed")
        return 1.0

    monkeypatch.chdir(tmp_path)
    start_tracking(Settings(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db"))
    examples = [dspy.Example(question=question).with_inputs("question") for question in ("a", "unparseable", "b")]
    with tracked_run("evaluate"):
        results, _ = evaluate_program(Echo(), examples, judged, model=ModelSettings(), num_threads=2, progress=False)
    assert [(prediction is None, score) for _, prediction, score in results] == [(False, 1.0), (True, 0.0),
                                                                                (False, 1.0)]
