"""What LaMP-QA's evaluation costs per question and per step, and what a re-run costs.

Measures, on the bundled synthetic test questions (a fresh DSPy cache, then the same cache again):
- per method and step (`answer`: retrieval + planner + answerer on the task model; `judge`: one call per gold aspect;
  `coverage`: PlanPers' plan judged per aspect): LM requests, prompt and completion tokens, wall seconds and failed
  calls or parses, in total and per question; questions run in parallel (`--threads`);
- the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics);
- the same evaluation again: every answer must come from DSPy's cache (its LM requests are counted).

Run: .venv/bin/python benchmarks/lampqa_cost.py [--max-questions 1] [--k 5] [--threads 4] [--task-api-base URL]
"""

from __future__ import annotations

from harness import Measured, make_parser, measure_evaluation, step_row

from prefcraft.components.component import StepRun
from prefcraft.components.lampqa.evaluation import evaluate_methods, method_programs, select_questions
from prefcraft.components.lampqa.options import EvaluateOptions
from prefcraft.engine.small_model import field_bounds
from prefcraft.registry import COMPONENTS
from prefcraft.runner import open_step_run
from prefcraft.settings import Settings
from prefcraft.tracking.runs import MLflowTracker, StepTracker


def run(session: Settings, options: EvaluateOptions) -> Measured:
    loaded = select_questions(options, options.questions_split)
    programs, compiled = method_programs(options, session.task.model)
    tracker = MLflowTracker()
    step_run = StepRun(session, session, StepTracker(tracker), print, loaded)
    with open_step_run(COMPONENTS["lampqa"], tracker, "evaluate", options, step_run):  # `lampqa evaluate`'s run
        outcome = evaluate_methods(session, step_run.tracker, options, loaded, programs, compiled)
    return Measured(
        steps=[step_row(cost, outcome.questions, "question", method=name, step=step)
               for name, method in outcome.methods.items() for step, cost in method.cost.items()],
        own={"score": {name: method.report.overall.mean for name, method in outcome.methods.items()}},
    )


def main() -> None:
    parser = make_parser(__doc__, "lampqa_cost.json", timeout_s=300.0)
    parser.add_argument("--max-questions", "--questions-per-category", type=int, default=1,
                        help="first N test questions per category")
    parser.add_argument("--k", type=int, default=5, help="posts retrieved from each profile")
    args = parser.parse_args()
    measure_evaluation(
        args, lambda session, output_dir: run(session, EvaluateOptions(
            max_questions=args.max_questions, no_shipped=True, k=args.k, output_dir=output_dir)),
        lambda session: {"questions": 3 * args.max_questions, "k": args.k,
                         "answer_bound_chars": field_bounds(session.small_model_profile())[0]["AnswerWithPlan.answer"]})

if __name__ == "__main__":
    main()
