"""What PrefDisco's evaluation costs per scenario, per condition and per step; and a re-run.

Measures, on the bundled synthetic scenarios (test split, a fresh DSPy cache, then the same cache again):
- per condition (Baseline, Oracle, Discovery) and step (generation: answers, and for Discovery the asker's turns and
  the simulator's replies; grading: one call per rubric criterion plus one correctness call): LM requests, prompt and
  completion tokens, wall seconds and failed calls or parses, in total and per scenario; scenarios run in parallel;
- the call count the cost model predicts: a dialogue of k questions costs k asker + k simulator calls + 1 answer (+1
  asker call when the asker stops before its budget), and grading costs criteria + 1 calls per response;
- the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics);
- the same evaluation again: every answer must come from DSPy's cache (its LM requests are counted).

Run: .venv/bin/python benchmarks/prefdisco_cost.py [--max-scenarios 3] [--max-turns 2] [--threads 4]
     [--task-api-base URL]
"""

from __future__ import annotations

import json

from harness import Measured, make_parser, measure_evaluation, step_row

from prefcraft.components.component import StepRun
from prefcraft.components.prefdisco.evaluation import DISCOVERY, evaluate_conditions, select_scenarios
from prefcraft.components.prefdisco.options import EvaluateOptions
from prefcraft.registry import COMPONENTS
from prefcraft.runner import open_step_run
from prefcraft.settings import Settings
from prefcraft.tracking.runs import MLflowTracker, StepTracker


def run(session: Settings, options: EvaluateOptions, scenarios: list) -> Measured:
    tracker = MLflowTracker()
    step = StepRun(session, session, StepTracker(tracker), print, scenarios)
    with open_step_run(COMPONENTS["prefdisco"], tracker, "evaluate", options, step):  # `prefdisco evaluate`'s run
        outcome = evaluate_conditions(session, step.tracker, options, scenarios)
    dialogues = [json.loads(line) for line in outcome.results_path.read_text(encoding="utf-8").splitlines()]
    discovery = [row for row in dialogues if row["condition"] == DISCOVERY and row["failed"] != "generation"]
    predicted = {
        "discovery_generation": sum(2 * len(row["turns"]) + 1 + (len(row["turns"]) < options.max_turns)
                                    for row in discovery),
        "grading_per_condition": sum(len(s.criteria) + 1 for s in scenarios),
    }
    return Measured(
        steps=[step_row(cost, len(scenarios), "scenario", condition=condition, step=step)
               for condition, steps in outcome.costs.items() for step, cost in steps.items()],
        own={"questions_per_dialogue": sum(len(row["turns"]) for row in discovery) / max(len(discovery), 1),
             "predicted_calls": predicted},
    )


def main() -> None:
    parser = make_parser(__doc__, "prefdisco_cost.json", timeout_s=900.0)
    parser.add_argument("--max-scenarios", "--scenarios", type=int, default=3,
                        help="first N scenarios of the test split")
    parser.add_argument("--max-turns", type=int, default=2)
    args = parser.parse_args()
    scenarios = select_scenarios(EvaluateOptions(max_scenarios=args.max_scenarios), "test")
    measure_evaluation(
        args, lambda session, output_dir: run(session, EvaluateOptions(
            max_scenarios=args.max_scenarios, max_turns=args.max_turns, no_shipped=True, output_dir=output_dir),
            scenarios),
        lambda session: {"scenarios": len(scenarios), "max_turns": args.max_turns})

if __name__ == "__main__":
    main()
