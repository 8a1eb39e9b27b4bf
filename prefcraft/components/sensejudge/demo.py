"""`prefcraft sensejudge demo`: simulate, select and evaluate, each its own MLflow run, in one model session; it reads
the dialogues before any model starts, and the pairs once the simulation has written them."""

from __future__ import annotations

from prefcraft.components.component import StepRun
from prefcraft.components.sensejudge.evaluation import evaluate_judge, read_held_out_pairs
from prefcraft.components.sensejudge.options import DemoOptions
from prefcraft.components.sensejudge.results import DemoOutcome
from prefcraft.components.sensejudge.selection import read_dev_pairs, select_descriptions
from prefcraft.components.sensejudge.simulation import sample_dialogues, simulate_pairs


def demo(options: DemoOptions, run: StepRun) -> DemoOutcome:
    """Simulate, select and evaluate, each its own run, on the pairs the simulation writes to `options.data`."""
    pools = sample_dialogues(run.loaded, options, run.session.seed)
    simulation = simulate_pairs(run.session, run.tracker, pools, options.sensebench, options.data, options)
    selection = select_descriptions(run.session, run.tracker, options, read_dev_pairs(options))
    evaluation = evaluate_judge(run.session, run.tracker, options, read_held_out_pairs(options))
    return DemoOutcome(simulation, selection, evaluation)
