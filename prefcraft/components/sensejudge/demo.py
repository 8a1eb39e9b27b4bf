"""`prefcraft sensejudge demo`: simulate, select and evaluate, each in its own MLflow run (the run that step declares,
opened by the runner: `StepRun.open_step`), in one model session; it reads the dialogues before any model starts, and
the pairs once the simulation has written them."""

from __future__ import annotations

from prefcraft.components.component import StepRun
from prefcraft.components.sensejudge.evaluation import evaluate_judge, read_held_out_pairs
from prefcraft.components.sensejudge.options import DemoOptions
from prefcraft.components.sensejudge.results import DemoOutcome
from prefcraft.components.sensejudge.selection import read_dev_pairs, select_descriptions
from prefcraft.components.sensejudge.simulation import sample_dialogues, simulate_pairs


def demo(options: DemoOptions, run: StepRun) -> DemoOutcome:
    """Simulate, select and evaluate, each in the run its step declares, on the pairs the simulation writes to
    `options.data`. The select and evaluate runs' params read what those steps' `load` reads, so each is opened with
    it."""
    pools = sample_dialogues(run.loaded, options, run.session.seed)
    with run.open_step("simulate", options):
        simulation = simulate_pairs(run.session, run.tracker, pools, options.data, options)
    dev_pairs = read_dev_pairs(options)
    with run.open_step("select", options, loaded=dev_pairs):
        selection = select_descriptions(run.session, run.tracker, options, dev_pairs)
    held_out = read_held_out_pairs(options)
    with run.open_step("evaluate", options, loaded=held_out):
        evaluation = evaluate_judge(run.session, run.tracker, options, held_out)
    return DemoOutcome(simulation, selection, evaluation)
