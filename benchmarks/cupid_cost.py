"""What CUPID's evaluation costs per instance and per step, and what a re-run costs.

Measures, on the bundled synthetic instances (a fresh DSPy cache, then the same cache again):
- per step (infer, match = decomposer + matcher twice, generate and judge per response method): LM requests, prompt
  and completion tokens, wall seconds and failed calls or parses, in total and per instance; instances run in
  parallel (`--threads`);
- the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics);
- the same evaluation again: every answer must come from DSPy's cache (its LM requests are counted).

Run: .venv/bin/python benchmarks/cupid_cost.py [--max-instances 6] [--inferrers all] [--threads 4] [--task-api-base URL]
"""

from __future__ import annotations

from harness import Measured, make_parser, measure_evaluation, step_row

from prefcraft.components.component import StepRun
from prefcraft.components.cupid.evaluation import evaluate, evaluated, select_instances
from prefcraft.components.cupid.options import EvaluateOptions
from prefcraft.registry import COMPONENTS
from prefcraft.runner import open_step_run
from prefcraft.settings import Settings
from prefcraft.tracking.runs import MLflowTracker, StepTracker


def run(session: Settings, options: EvaluateOptions, instances: list) -> Measured:
    """The evaluation of `instances`, recorded as `prefcraft cupid evaluate` records it: in the "cupid-evaluate" run,
    with that step's params, opened as the runner opens it."""
    tracker = MLflowTracker()
    step_run = StepRun(session, session, StepTracker(tracker), lambda line: None, evaluated(options, instances))
    with open_step_run(COMPONENTS["cupid"], tracker, "evaluate", options, step_run):
        outcome = evaluate(options, step_run)
    steps = [(inference.name, step, cost) for inference in outcome.inference for step, cost in inference.costs.items()]
    steps += [(f"respond {response.method}", step, cost) for response in outcome.responses
              for step, cost in response.costs.items()]
    return Measured(
        steps=[step_row(cost, outcome.instances, "instance", method=method, step=step) for method, step, cost in steps],
        own={"f1": {inference.name: inference.overall.f1.mean for inference in outcome.inference}},
    )


def main() -> None:
    parser = make_parser(__doc__, "cupid_cost.json")
    parser.add_argument("--max-instances", "--instances", type=int, default=6,
                        help="first N instances of the test split")
    parser.add_argument("--inferrers", "--variants", nargs="+", default=["all"], help="inferrer variants")
    args = parser.parse_args()
    instances, _ = select_instances(EvaluateOptions(max_instances=args.max_instances), "test")
    measure_evaluation(
        args, lambda session, output_dir: run(session, EvaluateOptions(inferrers=args.inferrers, no_shipped=True,
                                                                       output_dir=output_dir), instances),
        lambda session: {"instances": len(instances), "variants": args.inferrers})


if __name__ == "__main__":
    main()
