"""`prefcraft sensejudge simulate`: labelled pairs on real SenseBench requests, their labels SIMULATED (the work is
`simulation`'s). It reads the dialogues before any model starts."""

from __future__ import annotations

from prefcraft.components.component import StepRun
from prefcraft.components.sensejudge.data import Dialogue
from prefcraft.components.sensejudge.options import DemoOptions, SimulateOptions
from prefcraft.components.sensejudge.results import SimulationSummary
from prefcraft.components.sensejudge.simulation import read_dialogues, sample_dialogues, simulate_pairs


def read_simulated(options: SimulateOptions | DemoOptions) -> list[Dialogue]:
    """The SenseBench dialogues the simulation draws from, checked against its options."""
    return read_dialogues(options.sensebench, options)


def simulate(options: SimulateOptions, run: StepRun) -> SimulationSummary:
    pools = sample_dialogues(run.loaded, options, run.session.seed)
    return simulate_pairs(run.session, run.tracker, pools, options.sensebench, options.output, options)
