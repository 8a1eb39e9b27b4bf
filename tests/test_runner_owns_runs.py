"""The runner owns the run: it opens the MLflow run each step declares (its name and params), and a component's code
records into it only through the `StepTracker` it is handed (child runs, metrics, result files). No component opens
a run, imports MLflow or writes a result file itself; the HTML report reads the run names the steps declare."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from prefcraft import runner
from prefcraft.components.component import Component, Demo, Step, StepCode, StepRun
from prefcraft.options import Options
from prefcraft.registry import COMPONENTS
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker
from tests.fakes import FakeTracker

COMPONENTS_FOLDER = Path(__file__).resolve().parent.parent / "prefcraft" / "components"
SAMPLE_GENERATORS = {"generate.py"}
"""Scripts that write a component's bundled sample data (`python -m prefcraft.components.<name>.generate`): not
steps, no run, no result."""
FORBIDDEN_IMPORTS = {
    "mlflow": None,
    "prefcraft.files": {"write_text_atomic", "write_jsonl_atomic"},
    "prefcraft.tracking.runs": {"tracked_run", "start_tracking", "MLflowTracker", "log_json", "log_file", "log_metrics",
                           "write_results"},
}


def component_modules() -> list[Path]:
    return sorted(path for path in COMPONENTS_FOLDER.rglob("*.py") if path.name not in SAMPLE_GENERATORS)


def plumbing(path: Path) -> list[str]:
    """What in the module opens a run, imports MLflow or a writer, or writes a file: `line: what`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {alias.name}" for alias in node.names
                      if alias.name.split(".")[0] == "mlflow"]
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = "mlflow" if node.module.split(".")[0] == "mlflow" else node.module
            if module in FORBIDDEN_IMPORTS:
                names = FORBIDDEN_IMPORTS[module]
                found += [f"{node.lineno}: from {node.module} import {alias.name}" for alias in node.names
                          if names is None or alias.name in names]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = ast.unparse(node.func.value)
            if node.func.attr == "run" and receiver.split(".")[-1] == "tracker":
                found.append(f"{node.lineno}: {receiver}.run(...) opens a run")
            elif node.func.attr in ("write_text", "write_bytes"):
                found.append(f"{node.lineno}: {receiver}.{node.func.attr}(...)")
            elif node.func.attr == "open" and _writes(node, first_mode_argument=0):
                found.append(f"{node.lineno}: {receiver}.open(...) for writing")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open" \
                and _writes(node, first_mode_argument=1):
            found.append(f"{node.lineno}: open(...) for writing")
    return found


def _writes(call: ast.Call, first_mode_argument: int) -> bool:
    modes = [keyword.value for keyword in call.keywords if keyword.arg == "mode"]
    modes += call.args[first_mode_argument:first_mode_argument + 1]
    return any(isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax")
               for mode in modes)


@pytest.mark.parametrize("path", component_modules(), ids=lambda path: str(path.relative_to(COMPONENTS_FOLDER)))
def test_no_component_opens_a_run_imports_mlflow_or_writes_a_file_itself(path):
    assert plumbing(path) == []


def test_the_check_finds_each_kind_of_plumbing(tmp_path):
    module = tmp_path / "steps.py"
    module.write_text(
        "import mlflow\n"
        "from prefcraft.tracking.runs import write_results, model_params\n"
        "from prefcraft.files import write_text_atomic\n"
        "def work(run, path):\n"
        "    with run.tracker.run('evaluate', {}):\n"
        "        path.write_text('x')\n"
        "    with open(path, 'a') as handle, path.open('w') as other, open(path) as read:\n"
        "        pass\n"
        "    run.tracker.child('user')\n"
        "    run.tracker.write_results(path, [])\n")
    assert plumbing(module) == [
        "1: import mlflow", "2: from prefcraft.tracking.runs import write_results",
        "3: from prefcraft.files import write_text_atomic", "5: run.tracker.run(...) opens a run",
        "6: path.write_text(...)", "7: open(...) for writing", "7: path.open(...) for writing"]


def test_every_tracked_step_that_runs_alone_declares_its_run_and_the_report_reads_those_names():
    for component in COMPONENTS.values():
        declared = {name: step.run_name for name, step in component.steps.items()}
        assert component.run_names == tuple(dict.fromkeys(name for name in declared.values() if name))
        for name, step in component.steps.items():
            if step.tracked and name != "demo":
                assert step.run_name, f"{component.name} {name} declares no run"


class _Options(Options):
    rows: int = 2


def _work(options: _Options, run: StepRun) -> int:
    with run.tracker.child("first-row", {"row": 0}):
        run.tracker.log_metrics({"answered": 1.0})
    run.tracker.log_metrics({"rows": float(len(run.loaded))})
    with run.open_step("other", options):
        run.tracker.log_metrics({"other": 1.0})
    return len(run.loaded)


def _code() -> StepCode:
    return StepCode(_work, str, lambda options: list(range(options.rows)),
                    lambda options, run: {"rows": len(run.loaded), "asked": options.rows})


def _other_code() -> StepCode:
    return StepCode(_work, str, params=lambda options, run: {"other": True})


def test_the_runner_opens_the_declared_run_with_its_params_and_the_work_records_into_it(monkeypatch):
    component = Component(
        name="plumbing", title="Plumbing", help="a component made by this test",
        steps={"evaluate": Step("a step", lambda: _Options, _code, models=False, run_name="plumbing-evaluate"),
               "other": Step("another", lambda: _Options, _other_code, models=False, run_name="plumbing-other")},
        demo=Demo(lambda sensebench: None, lambda outcome: None))  # type: ignore[arg-type]
    monkeypatch.setitem(COMPONENTS, component.name, component)
    fake = FakeTracker()
    monkeypatch.setattr(runner, "start_tracking", lambda session: fake)

    outcome = runner.run_step("plumbing", "evaluate", _Options(rows=3), Settings(), emit=lambda line: None)

    assert outcome == 3
    evaluate, child, other = fake.runs
    assert (evaluate.name, evaluate.params, evaluate.nested) == ("plumbing-evaluate", {"rows": 3, "asked": 3}, False)
    assert evaluate.metrics == {"rows": 3.0}
    assert (child.name, child.params, child.nested, child.metrics) == ("first-row", {"row": 0}, True, {"answered": 1.0})
    assert (other.name, other.params, other.metrics) == ("plumbing-other", {"other": True}, {"other": 1.0})
    assert component.run_names == ("plumbing-evaluate", "plumbing-other")


def test_a_step_tracker_opens_no_top_level_run():
    assert not hasattr(StepTracker(FakeTracker()), "run")
