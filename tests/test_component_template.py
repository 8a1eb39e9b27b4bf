"""The component template (docs/component-template/) is what README's "Adding a component" says: copied in and
registered, it is a sixth component that the command line lists with its flags, the runner runs on a model server (the
stand-in) and the HTML report shows; and setup.py packages a component folder without naming it.

The copy goes where a contributor's files go (the package paths of prefcraft.components, prefcraft.programs and
prefcraft.signatures) and into `COMPONENTS`, as the line in prefcraft/registry.py puts it. The HTML report's tables
of run names are built from the registry when it is imported, before this test registers anything: the test adds the
component to them too, as that line would have.
"""

from __future__ import annotations

import json
import runpy
import shutil
import sys
from pathlib import Path

import pytest
import setuptools
from fault_commands import tracking_uri
from openai_standin import StandInServer

import prefcraft.components
import prefcraft.programs
import prefcraft.signatures
from prefcraft.commands.main import main
from prefcraft.engine import small_model
from prefcraft.html_report import write_report
from prefcraft.registry import COMPONENTS
from prefcraft.runner import run_step
from prefcraft.settings import ModelSettings, Settings

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "docs" / "component-template"
FILE_LIST = TEMPLATE / "README.md"
TEMPLATE_MODULES = ("prefcraft.components.example", "prefcraft.programs.example", "prefcraft.signatures.example")


@pytest.fixture
def registered(tmp_path, monkeypatch):
    """The template's component, copied into `tmp_path` and registered; its modules and bounds gone afterwards."""
    shutil.copytree(TEMPLATE, tmp_path / "tree")
    for package, folder in ((prefcraft.components, "prefcraft/components"), (prefcraft.programs, "programs"),
                            (prefcraft.signatures, "signatures")):
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path / "tree" / folder)])
    declared = {kind: dict(bounds) for kind, bounds in small_model._DECLARED.items()}
    monkeypatch.setattr(small_model, "_DECLARED", declared)
    from prefcraft.components.example.commands import COMPONENT

    monkeypatch.setitem(COMPONENTS, COMPONENT.name, COMPONENT)  # what the one line in prefcraft/registry.py does
    yield COMPONENT
    for name in [name for name in sys.modules if name.startswith(TEMPLATE_MODULES)]:
        del sys.modules[name]


def template_files() -> set[str]:
    return {path.relative_to(TEMPLATE).as_posix() for path in TEMPLATE.rglob("*") if path.is_file()} - {"README.md"}


def listed_files() -> set[str]:
    """The files the template's README lists, each as a `path` at the start of a list item."""
    lines = FILE_LIST.read_text().splitlines()
    return {line.split("`")[1] for line in lines if line.startswith("- `")}


def test_the_template_readme_lists_exactly_the_files_one_writes():
    assert listed_files() == template_files()
    assert f"{len(template_files())} files" in FILE_LIST.read_text()


def test_a_sixth_component_from_the_template_lists_its_flags_runs_through_the_runner_and_is_in_the_report(
        registered, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["example", "evaluate", "--help"])
    shown = capsys.readouterr().out
    assert "--requests" in shown and "the requests to answer" in shown and "--output-dir" in shown

    from prefcraft.components.example.options import EvaluateOptions

    server = StandInServer()
    uri = tracking_uri(tmp_path)
    settings = Settings(serve=False, task=ModelSettings(api_base=server.api_base), tracking_uri=uri,
                        cache_dir=tmp_path / "cache", threads=1)
    emitted = []
    try:
        outcome = run_step("example", "evaluate", EvaluateOptions(requests=["Say hi.", "Say hello."],
                                                                  output_dir=tmp_path / "answers"),
                           settings, emitted.append)
    finally:
        server.close()
    assert len(server.bodies) == 2 and "Say hello." in json.dumps(server.bodies[1])
    assert outcome.answered == 2
    assert emitted == [f"Example: 2 of 2 requests answered (100%); answers in {outcome.results}; 2 model calls"]
    rows = [json.loads(line) for line in outcome.results.read_text().splitlines()]
    assert [row["request"] for row in rows] == ["Say hi.", "Say hello."]

    html = write_report(uri, settings.mlflow_experiment, tmp_path / "report.html", max_runs=5).read_text()
    assert "example-evaluate" in html and ">Example<" in html


def test_setup_py_packages_a_component_folder_it_does_not_name(tmp_path, monkeypatch):
    """setup.py's package list, computed on a tree holding the template: no wheel is built (tests/test_packaging.py
    builds the repository's)."""
    shutil.copy(ROOT / "setup.py", tmp_path)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(TEMPLATE, tmp_path, dirs_exist_ok=True)
    (tmp_path / "prefcraft" / "components" / "example" / "sample").mkdir()
    (tmp_path / "prefcraft" / "components" / "example" / "sample" / "requests.jsonl").write_text('{"id": 1}\n')
    given = {}
    monkeypatch.setattr(setuptools, "setup", lambda **arguments: given.update(arguments))
    runpy.run_path(str(tmp_path / "setup.py"))
    assert {"prefcraft.components.example", "prefcraft.components.example.sample", "prefcraft.programs",
            "prefcraft.signatures"} <= set(given["packages"])
