"""What a component is to the rest of prefcraft: its steps (options and work each), the MLflow runs they open, the
comparison its demo gives the tour and what its runs add to the HTML report. Each component's `commands` module builds
one `Component`; `prefcraft.registry` lists them, and the command line, tour, experiments, sweeps, report and Python
API read it. `prefcraft.runner` runs a step.

A component gives its steps' options and code, its charts and its programs as functions that import them when called
(`import_options`, `import_code`, ...): listing the components and their steps (`prefcraft --help`,
`prefcraft <component> --help`) loads no DSPy, no model code and no plotting, and building one step's flags imports its
options model alone."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefcraft.options import Options

if TYPE_CHECKING:
    from prefcraft.report_parts.blocks import Chart, Plot, Table
    from prefcraft.report_parts.records import RunRecord
    from prefcraft.settings import Settings
    from prefcraft.tracking.runs import StepTracker

Emit = Callable[[str], None]


def _opens_nothing(step: str, options: Any, run: StepRun) -> AbstractContextManager[Any]:
    return nullcontext()


@dataclass(frozen=True)
class StepRun:
    """What the runner hands a step's work: the settings, the run it opened (`tracker`: child runs, metrics, result
    files), where progress goes and what the step's `load` read."""

    settings: Settings
    """The settings as given (a Ray worker starts from these)."""
    session: Settings
    """The settings with every model reachable: a served model's address filled in (the settings as given when the
    step runs no model)."""
    tracker: StepTracker
    emit: Emit
    """Progress lines while the step runs; its report is printed once it has finished."""
    loaded: Any = None
    """What the step's `load` read before any model started."""
    open_run: Callable[[str, Any, StepRun], AbstractContextManager[Any]] = _opens_nothing
    """The runner's: opens the run another step of the component declares (`open_step`)."""

    def open_step(self, step: str, options: Any, loaded: Any = None) -> AbstractContextManager[Any]:
        """The run that `step` of this component declares, with its params for `options` (and for `loaded`, what that
        step's `load` would have read, where it differs from this step's), opened by the runner: how a step that runs
        others (a demo) records each of them as its own run."""
        return self.open_run(step, options, self if loaded is None else replace(self, loaded=loaded))


def failed_items(outcome: Any) -> int:
    """The items (users, instances, scenarios, questions, descriptions) whose work failed in a step's outcome, each
    recorded with its reason while the run went on: the outcome's `failed_items`, added up over the outcomes of a list
    or a mapping (an experiment's steps, an evaluation's methods); 0 for an outcome that counts none."""
    if isinstance(outcome, Mapping):
        return sum(failed_items(value) for value in outcome.values())
    if isinstance(outcome, list | tuple):
        return sum(failed_items(value) for value in outcome)
    return int(getattr(outcome, "failed_items", 0))


def _nothing_to_load(options: Any) -> None:
    return None


def _no_params(options: Any, run: StepRun) -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True)
class Comparison:
    """A demo's headline: the component's metric for its baseline and for its personalized method."""

    metric: str
    baseline: str
    baseline_score: float
    personalized: str
    personalized_score: float
    scale: str
    """How to print the scores: "%" (a share, as a percentage) or "points" (the metric's own scale, 2 decimals)."""


@dataclass(frozen=True)
class StepCode:
    """What a step runs, imported together when it runs."""

    work: Callable[[Any, StepRun], Any]
    """What the step does, given its options, inside the model session and MLflow tracking the runner opened;
    returns its outcome."""
    report: Callable[[Any], str]
    """The outcome as the terminal report."""
    load: Callable[[Any], Any] = _nothing_to_load
    """What the step reads before any model starts (its data), so that bad input stops it before a server starts;
    its work finds it in `StepRun.loaded`."""
    params: Callable[[Any, StepRun], Mapping[str, Any]] = _no_params
    """The params of the run the runner opens for the step (`Step.run_name`), from its options and what its `load`
    read: what `--resume` compares to find the run to continue."""


@dataclass(frozen=True)
class Step:
    help: str
    import_options: Callable[[], type[Options]]
    """Imports its options model: its job, what the step takes, as flags, experiment and sweep options or
    `prefcraft.run` arguments, read directly by its work; the settings (models, server, tracking) are not among them."""
    import_code: Callable[[], StepCode]
    """Imports its work, report and load."""
    models: bool = True
    """It runs models: the runner opens a model session (starting the servers it needs) around its work."""
    tracked: bool = True
    """It is tracked in MLflow (a step that neither runs a model nor writes results is not)."""
    settings_defaults: Mapping[str, Any] = field(default_factory=dict)
    """Settings flags' defaults on its command line, by dest (`task_timeout_s`): a flag given still wins."""
    run_name: str | None = None
    """The MLflow run the runner opens around its work, with the step's `params`; None for a step that opens none (an
    untracked one, or one that runs other steps, each in its own run: `StepRun.open_step`)."""

    @property
    def options(self) -> type[Options]:
        return self.import_options()

    @property
    def work(self) -> Callable[[Any, StepRun], Any]:
        return self.import_code().work

    @property
    def report(self) -> Callable[[Any], str]:
        return self.import_code().report

    @property
    def load(self) -> Callable[[Any], Any]:
        return self.import_code().load

    @property
    def params(self) -> Callable[[Any, StepRun], Mapping[str, Any]]:
        return self.import_code().params


@dataclass(frozen=True)
class Demo:
    """How the tour runs the component: the demo's command line and the comparison drawn from its outcome."""

    argv: Callable[[Path | None], list[str] | None]
    """The demo's arguments after `prefcraft <component>`, given the SenseBench path; None when it cannot run."""
    compare: Callable[[Any], Comparison]


def _no_charts(run: RunRecord) -> list[Chart]:
    return []


@dataclass(frozen=True)
class ReportSection:
    """A section of the HTML report that the component's runs fill alone."""

    title: str
    intro: str
    missing: str
    """What would fill it, shown when no run does."""
    blocks: Callable[[RunRecord], list[Plot | Table]]
    """A run's tables and figures for the section; none where the run holds nothing for it."""


@dataclass(frozen=True)
class ReportCharts:
    """What the component's runs add to the HTML report (`prefcraft report`); each hook is given one of its runs."""

    comparisons: Callable[[RunRecord], list[Chart]] = _no_charts
    """Its baseline against its personalized methods (a compile's validation scores are drawn for every component)."""
    spreads: Callable[[RunRecord], list[Chart]] = _no_charts
    """The per-user or per-category values behind its estimates, as the rows' points."""
    settings: Callable[[RunRecord], str] = lambda run: ""
    """The runs table's "optimizer / compared" cell for a run that names no optimizer; "" leaves it to the params
    every command shares (its methods, inferrers, conditions)."""
    sections: tuple[ReportSection, ...] = ()


@dataclass(frozen=True)
class Component:
    name: str
    """The command word: `prefcraft <name> <step>`."""
    title: str
    """The name in tables and reports."""
    help: str
    steps: Mapping[str, Step]
    demo: Demo
    sweepable: bool = False
    """Its `compile` step returns a compile outcome (a ship verdict and its usage), so a sweep can search over it."""
    import_charts: Callable[[], ReportCharts] = ReportCharts
    """Imports what its runs add to the HTML report (`charts`)."""
    import_programs: Callable[[], Mapping[str, Callable[[dict[str, Any]], Any]]] = dict
    """Imports the programs its steps save compiled (`programs`)."""

    @property
    def run_names(self) -> tuple[str, ...]:
        """The MLflow runs the runner opens for its steps, by name (once each: a demo may open its evaluation's): what
        the HTML report reads as its runs."""
        return tuple(dict.fromkeys(step.run_name for step in self.steps.values() if step.run_name))

    @property
    def charts(self) -> ReportCharts:
        return self.import_charts()

    @property
    def programs(self) -> Mapping[str, Callable[[dict[str, Any]], Any]]:
        """The programs its steps save compiled, by the program name in the file's metadata: each builds a fresh
        program as that metadata describes, for `prefcraft.load` to load the file into."""
        return self.import_programs()
