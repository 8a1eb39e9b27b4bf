"""What LaMP-QA's evaluation costs per question and per step on the embedded server, and what a re-run costs.

Measures, on the bundled synthetic test questions (a fresh DSPy cache, then the same cache again):
- per method and step (`answer`: retrieval + planner + answerer on the task model; `judge`: one call per gold aspect;
  `coverage`: PlanPers' plan judged per aspect): LM requests, prompt and completion tokens, wall seconds and failed
  calls or parses, in total and per question; questions run in parallel (`--threads`);
- the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics);
- the same evaluation again: every answer must come from DSPy's cache (its LM requests are counted).

Run: .venv/bin/python benchmarks/lampqa_cost.py [--questions-per-category 1] [--k 5] [--threads 4]
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
from prefcraft.commands.lampqa import (
    EvaluationJob,
    EvaluationOutcome,
    LampQAData,
    RetrievalConfig,
    evaluate_methods,
    method_programs,
)
from prefcraft.settings import ModelSettings, ServerSettings, Settings
from prefcraft.tracking import start_tracking

RESULTS = Path(__file__).resolve().parent / "results" / "lampqa_cost.json"


def step_rows(outcome: EvaluationOutcome) -> list[dict]:
    n = outcome.questions
    return [{"method": name, "step": step, **asdict(cost.usage), "seconds": round(cost.seconds, 2),
             "failures": cost.failures, "calls_per_question": cost.usage.calls / n,
             "prompt_tokens_per_question": cost.usage.prompt_tokens / n,
             "completion_tokens_per_question": cost.usage.completion_tokens / n,
             "seconds_per_question": round(cost.seconds / n, 2)}
            for name, method in outcome.methods.items() for step, cost in method.cost.items()]


def run(session: Settings, job: EvaluationJob) -> dict:
    loaded = job.data.load(job.split)
    programs, compiled = method_programs(job, session.task.model)
    started = time.perf_counter()
    with metered_prompt_cache(session.task.api_base) as server:
        outcome = evaluate_methods(session, job, loaded, programs, compiled)
    rows = step_rows(outcome)
    return {
        "wall_seconds": round(time.perf_counter() - started, 1),
        "lm_calls": sum(row["calls"] for row in rows),
        "prompt_tokens": sum(row["prompt_tokens"] for row in rows),
        "completion_tokens": sum(row["completion_tokens"] for row in rows),
        "failures": sum(row["failures"] for row in rows),
        "server_prompt_tokens": asdict(server.usage) if server.usage else None,
        "steps": rows,
        "score": {name: method.report.overall.mean for name, method in outcome.methods.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions-per-category", type=int, default=1, help="first N test questions per category")
    parser.add_argument("--k", type=int, default=5, help="posts retrieved from each profile")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    scratch = Path(tempfile.mkdtemp(prefix="lampqa-cost-"))
    with managed_server(ServerSettings(log_dir=scratch / "logs")) as server:
        session = Settings(task=ModelSettings(api_base=server.base_url, timeout_s=300), serve=False,
                           num_threads=args.threads, tracking_uri=f"sqlite:///{scratch}/mlflow.db")
        start_tracking(session)
        dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(scratch / "cache"))
        job = EvaluationJob(data=LampQAData(max_questions=args.questions_per_category), use_shipped=False,
                            retrieval=RetrievalConfig(k=args.k), output_dir=scratch / "out")
        first = run(session, job)
        again = run(session, job)
    profile = session.small_model_profile()
    result = {"questions": 3 * args.questions_per_category, "k": args.k, "threads": args.threads,
              "model": session.task.model, "answer_bound_chars": profile.field_chars["AnswerWithPlan.answer"],
              "first_run": first,
              "rerun_same_cache": again,
              "note": "wall times measured on a shared 2-core machine while other jobs ran: inflated; counts exact"}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({key: value for key, value in first.items() if key != "steps"}, indent=2))
    print(f"re-run LM calls: {again['lm_calls']}; written to {args.output}")


if __name__ == "__main__":
    main()
