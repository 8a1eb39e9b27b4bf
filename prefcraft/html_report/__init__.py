"""`prefcraft report`: one self-contained HTML page from an MLflow tracking store, for a person to look at.

`collect` reads the runs into plain records (the only module that talks to MLflow), `sections` and `results` choose
what to show from the metrics the commands log, each component adding its own charts through its registry entry
(`Component.charts`), `page` writes the HTML with the figures inline: the file opens anywhere, offline, and can be
mailed or attached as one artifact. The records, blocks and figures themselves are `prefcraft.report_parts`, which the
components draw with: the report imports the components, never the other way.
"""

from __future__ import annotations

from pathlib import Path

from prefcraft.files import write_text_atomic
from prefcraft.html_report.collect import read_store
from prefcraft.html_report.page import render
from prefcraft.html_report.results import (
    comparisons_section,
    component_sections,
    spreads_section,
    sweeps_section,
    trajectories_section,
)
from prefcraft.html_report.sections import cost_section, programs_section, runs_section


def write_report(uri: str, experiment: str, output: Path, max_runs: int, mlflow_ui: str | None = None) -> Path:
    """The report of the `max_runs` most recent top-level runs of `experiment` in the store at `uri`, its compiled
    programs linked to the MLflow UI at `mlflow_ui` (`default_mlflow_ui(uri)` when not given)."""
    store = read_store(uri, experiment, max_runs)
    sections = [runs_section(store), programs_section(store, mlflow_ui or default_mlflow_ui(uri)),
                sweeps_section(store), trajectories_section(store), comparisons_section(store), spreads_section(store),
                *component_sections(store), cost_section(store)]
    return write_text_atomic(output, render(store, sections))


def default_mlflow_ui(uri: str) -> str:
    """A tracking server's UI is the server itself; a local store's is where `mlflow ui` listens by default."""
    return uri if uri.startswith(("http://", "https://")) else "http://127.0.0.1:5000"
