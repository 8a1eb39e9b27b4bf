"""What PrefDisco's evaluation costs per scenario, per condition and per step on the embedded server; and a re-run.

Measures, on the bundled synthetic scenarios (test split, a fresh DSPy cache, then the same cache again):
- per condition (Baseline, Oracle, Discovery) and step (generation: answers, and for Discovery the asker's turns and
  the simulator's replies; grading: one call per rubric criterion plus one correctness call): LM requests, prompt and
  completion tokens, wall seconds and failed calls or parses, in total and per scenario; scenarios run in parallel;
- the call count the cost model predicts: a dialogue of k questions costs k asker + k simulator calls + 1 answer (+1
  asker call when the asker stops before its budget), and grading costs criteria + 1 calls per response;
- the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics);
- the same evaluation again: every answer must come from DSPy's cache (its LM requests are counted).

Run: .venv/bin/python benchmarks/prefdisco_cost.py [--scenarios 3] [--max-turns 2] [--threads 4]
Wall times on a shared 2-core machine are inflated by other work; counts are exact.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import dspy

from prefcraft.backends import managed_server
from prefcraft.backends.metrics import metered_prompt_cache
from prefcraft.commands.prefdisco import DISCOVERY, EvaluationJob, PrefDiscoData, evaluate_conditions, select_scenarios
from prefcraft.settings import ModelSettings, ServerSettings, Settings
from prefcraft.tracking import start_tracking

RESULTS = Path(__file__).resolve().parent / "results" / "prefdisco_cost.json"


def run(session: Settings, job: EvaluationJob, scenarios: list) -> dict:
    started = time.perf_counter()
    with metered_prompt_cache(session.task.api_base) as server:
        outcome = evaluate_conditions(session, job, scenarios)
    n = len(scenarios)
    rows = [{"condition": condition, "step": step, **asdict(cost.usage), "seconds": round(cost.seconds, 2),
             "failures": cost.failures, "calls_per_scenario": cost.usage.calls / n,
             "prompt_tokens_per_scenario": cost.usage.prompt_tokens / n,
             "completion_tokens_per_scenario": cost.usage.completion_tokens / n,
             "seconds_per_scenario": round(cost.seconds / n, 2)}
            for condition, steps in outcome.costs.items() for step, cost in steps.items()]
    dialogues = [json.loads(line) for line in outcome.results_path.read_text(encoding="utf-8").splitlines()]
    discovery = [row for row in dialogues if row["condition"] == DISCOVERY and row["failed"] != "generation"]
    predicted = {
        "discovery_generation": sum(2 * len(row["turns"]) + 1 + (len(row["turns"]) < job.max_turns)
                                    for row in discovery),
        "grading_per_condition": sum(len(s.criteria) + 1 for s in scenarios),
    }
    return {
        "wall_seconds": round(time.perf_counter() - started, 1),
        "lm_calls": sum(row["calls"] for row in rows),
        "prompt_tokens": sum(row["prompt_tokens"] for row in rows),
        "completion_tokens": sum(row["completion_tokens"] for row in rows),
        "failures": sum(row["failures"] for row in rows),
        "questions_per_dialogue": sum(len(row["turns"]) for row in discovery) / max(len(discovery), 1),
        "predicted_calls": predicted,
        "server_prompt_tokens": asdict(server.usage) if server.usage else None,
        "steps": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=3, help="first N scenarios of the test split")
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--timeout-s", type=float, default=900.0, help="per call: the shared machine is slow")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    scenarios = select_scenarios(PrefDiscoData(max_scenarios=args.scenarios), "test")
    scratch = Path(tempfile.mkdtemp(prefix="prefdisco-cost-"))
    with managed_server(ServerSettings(log_dir=scratch / "logs")) as server:
        session = Settings(task=ModelSettings(api_base=server.base_url, timeout_s=args.timeout_s), serve=False,
                           num_threads=args.threads, tracking_uri=f"sqlite:///{scratch}/mlflow.db")
        start_tracking(session)
        dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(scratch / "cache"))
        job = EvaluationJob(data=PrefDiscoData(max_scenarios=args.scenarios), max_turns=args.max_turns,
                            use_shipped=False, output_dir=scratch / "out")
        first = run(session, job, scenarios)
        again = run(session, job, scenarios)
    result = {"scenarios": len(scenarios), "max_turns": args.max_turns, "threads": args.threads,
              "model": session.task.model, "first_run": first, "rerun_same_cache": again,
              "note": "wall times measured on a shared 2-core machine while other jobs ran: inflated; counts exact"}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in first.items() if k != "steps"}, indent=2))
    print(f"re-run LM calls: {again['lm_calls']}; written to {args.output}")


if __name__ == "__main__":
    main()
