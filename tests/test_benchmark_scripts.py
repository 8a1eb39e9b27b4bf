"""Every benchmark script imports as it runs (benchmarks/ first on the path) and shows its --help without a server, so
that a renamed import or option cannot break one unnoticed: the benchmarks themselves run only by hand."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parent.parent
BENCHMARKS = REPOSITORY / "benchmarks"
MODULES = sorted(BENCHMARKS.glob("*.py"))
SHARED = {"harness"}
"""Imported by the scripts, not run."""
SCRIPTS = [path for path in MODULES if path.stem not in SHARED]


def test_the_benchmarks_folder_holds_the_scripts():
    assert SHARED <= {path.stem for path in MODULES} and SCRIPTS


@pytest.mark.parametrize("module", MODULES, ids=lambda path: path.stem)
def test_each_module_imports_with_benchmarks_on_the_path(module, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # restored afterwards, with whatever the module adds to the path
    importlib.import_module(module.stem)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_each_script_shows_its_help_without_a_server(script):
    done = subprocess.run([sys.executable, str(script.relative_to(REPOSITORY)), "--help"], cwd=REPOSITORY,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:") and "--output" in done.stdout, done.stdout
