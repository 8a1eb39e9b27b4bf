"""What CUPID's evaluation costs per instance and per step on the embedded server, and what a re-run costs.

Measures, on the bundled synthetic instances (a fresh DSPy cache, then the same cache again):
- per step (infer, match = decomposer + matcher twice, generate and judge per response method): LM requests, prompt
  and completion tokens, wall seconds and failed calls or parses, in total and per instance; instances run in
  parallel (`--threads`);
- the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics);
- the same evaluation again: every answer must come from DSPy's cache (its LM requests are counted).

Run: .venv/bin/python benchmarks/cupid_cost.py [--instances 6] [--variants all] [--threads 4]
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
from prefcraft.commands.cupid import CupidData, EvaluationJob, EvaluationOutcome, evaluate_instances, select_instances
from prefcraft.settings import ModelSettings, ServerSettings, Settings
from prefcraft.tracking import start_tracking

RESULTS = Path(__file__).resolve().parent / "results" / "cupid_cost.json"


def step_rows(outcome: EvaluationOutcome) -> list[dict]:
    steps = [(inference.name, step, cost) for inference in outcome.inference for step, cost in inference.costs.items()]
    steps += [(f"respond {response.method}", step, cost) for response in outcome.responses
              for step, cost in response.costs.items()]
    n = outcome.instances
    return [{"method": method, "step": step, **asdict(cost.usage), "seconds": round(cost.seconds, 2),
             "failures": cost.failures, "calls_per_instance": cost.usage.calls / n,
             "prompt_tokens_per_instance": cost.usage.prompt_tokens / n,
             "completion_tokens_per_instance": cost.usage.completion_tokens / n,
             "seconds_per_instance": round(cost.seconds / n, 2)} for method, step, cost in steps]


def run(session: Settings, job: EvaluationJob, instances: list) -> dict:
    started = time.perf_counter()
    with metered_prompt_cache(session.task.api_base) as server:
        outcome = evaluate_instances(session, job, instances)
    rows = step_rows(outcome)
    return {
        "wall_seconds": round(time.perf_counter() - started, 1),
        "lm_calls": sum(row["calls"] for row in rows),
        "prompt_tokens": sum(row["prompt_tokens"] for row in rows),
        "completion_tokens": sum(row["completion_tokens"] for row in rows),
        "failures": sum(row["failures"] for row in rows),
        "server_prompt_tokens": asdict(server.usage) if server.usage else None,
        "steps": rows,
        "f1": {inference.name: inference.overall.f1.mean for inference in outcome.inference},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=6, help="first N instances of the test split")
    parser.add_argument("--variants", nargs="+", default=["all"])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--timeout-s", type=float, default=600.0, help="per call: a loaded 2-core machine is slow")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    instances, _ = select_instances(CupidData(max_instances=args.instances), "test")
    scratch = Path(tempfile.mkdtemp(prefix="cupid-cost-"))
    with managed_server(ServerSettings(log_dir=scratch / "logs")) as server:
        model = ModelSettings(api_base=server.base_url, timeout_s=args.timeout_s)
        session = Settings(task=model, serve=False, num_threads=args.threads,
                           tracking_uri=f"sqlite:///{scratch}/mlflow.db")
        start_tracking(session)
        dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(scratch / "cache"))
        job = EvaluationJob(variants=args.variants, use_shipped=False, output_dir=scratch / "out")
        first = run(session, job, instances)
        again = run(session, job, instances)
    result = {"instances": len(instances), "variants": args.variants, "threads": args.threads,
              "model": session.task.model, "first_run": first, "rerun_same_cache": again,
              "note": "wall times measured on a shared 2-core machine while other jobs ran: inflated; counts exact"}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in first.items() if k != "steps"}, indent=2))
    print(f"re-run LM calls: {again['lm_calls']}; written to {args.output}")


if __name__ == "__main__":
    main()
