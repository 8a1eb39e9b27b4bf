"""`prefcraft sensejudge simulate`: labelled pairs on real SenseBench requests, their labels SIMULATED (the work is
`simulation`'s). It reads the dialogues before any model starts; the runner opens its MLflow run
("sensejudge-simulate", `simulate_params`)."""

from __future__ import annotations

from prefcraft.components.component import StepRun
from prefcraft.components.sensejudge.data import Dialogue
from prefcraft.components.sensejudge.options import DemoOptions, SimulateOptions
from prefcraft.components.sensejudge.results import SimulationSummary
from prefcraft.components.sensejudge.simulation import (
    read_dialogues,
    sample_dialogues,
    simulate_pairs,
    simulation_params,
)


def read_simulated(options: SimulateOptions | DemoOptions) -> list[Dialogue]:
    """The SenseBench dialogues the simulation draws from, checked against its options."""
    return read_dialogues(options.sensebench, options)


def simulate_params(options: SimulateOptions | DemoOptions, run: StepRun) -> dict[str, object]:
    """The simulate run's params (`simulation_params`): what the demo's simulation logs too."""
    return simulation_params(run.session, options.sensebench, options)


def simulate(options: SimulateOptions, run: StepRun) -> SimulationSummary:
    pools = sample_dialogues(run.loaded, options, run.session.seed)
    return simulate_pairs(run.session, run.tracker, pools, options.output, options)
