"""What SenseJudge's demo costs per step against the vote formula; and what a re-run costs.

Runs `prefcraft sensejudge demo` (its `run_sensejudge`, with the demo's own flags and defaults) on real SenseBench
requests whose labels are SIMULATED (an LLM annotator given a persona, not a person), in a fresh DSPy cache, then
again in the same cache. Reports:
- per step (simulate: responses and simulated labels; select: the candidate descriptions, then every dev pair under
  every description in both orders, the subsets scored from those votes; evaluate: every candidate description on the
  test pairs, then the selected judge): LM requests, prompt and completion tokens, failed calls or parses, and the
  wall seconds of each command step;
- the vote calls against descriptions x dev pairs x 2 orders, and whether selection stopped early (once a subset is
  right on every dev judgment) and after how many descriptions;
- the evaluation: accuracy over both orders [95% interval], consistency and position bias for no description, each
  single description and the selected subset; the models ranked by the judge's wins and by Bradley-Terry, with
  Kendall's tau and Spearman's rho against the annotator's ranking;
- the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics);
- the whole demo again in the same cache: its LM requests (expected 0).

Run: .venv/bin/python benchmarks/sensejudge_cost.py [--dialogues ../shared/data/sensebench] [--threads 4]
    [--api-base URL]
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict
from itertools import pairwise
from pathlib import Path

from harness import (
    Measured,
    cold_then_warm,
    configure_logging,
    make_parser,
    model_endpoint,
    session_settings,
    write_result,
)

from prefcraft import cli
from prefcraft.components.sensejudge.commands import DEMO_DEFAULTS, job_from_flags
from prefcraft.components.sensejudge.report import SIMULATED_NOTE
from prefcraft.components.sensejudge.results import EvaluationOutcome
from prefcraft.components.sensejudge.steps import SenseJudgeJob, run_sensejudge
from prefcraft.settings import Settings

STEPS = ["simulate", "select", "evaluate"]  # what `prefcraft sensejudge demo` runs


def run(session: Settings, job: SenseJudgeJob, evaluations: list[EvaluationOutcome]) -> Measured:
    """The demo's three steps once, in the session's cache: per-step cost, the vote count and the evaluation (also
    appended to `evaluations`, for the tables)."""
    marks = [time.perf_counter()]

    def emit(text: str) -> None:  # run_sensejudge reports each step as it ends
        marks.append(time.perf_counter())
        logging.getLogger("sensejudge").info("\n%s", text)

    outcomes = run_sensejudge(session, job, STEPS, emit)
    simulation, selection, evaluation = (outcomes[step] for step in STEPS)
    evaluations.append(evaluation)
    record = selection.record
    costs = [("simulate: responses and labels", simulation.usage["responses"] + simulation.usage["labels"],
              simulation.failed_responses + simulation.failed_labels),
             ("select: extract descriptions", selection.usage["extraction"], 0),  # a failed call stops select
             ("select: judge votes, subset search", selection.usage["selection"], record.failed_calls),
             ("evaluate: every description", evaluation.usage["every_description"],
              sum(row.report.parse_failures for row in evaluation.rows)),
             ("evaluate: selected judge", evaluation.usage["selected_judge"],
              evaluation.selected.report.parse_failures)]
    dev_pairs, test_judgments = record.examples // 2, evaluation.selected.report.accuracy.n
    own = {
        "step_seconds": {step: round(end - start, 1)
                         for step, (start, end) in zip(STEPS, pairwise(marks), strict=True)},
        "pairs": {"dev": simulation.dev_pairs, "test": simulation.test_pairs, "dialogues": simulation.dialogues,
                  "replaced_dialogues": simulation.replaced_dialogues, "identical_pairs": simulation.identical_pairs,
                  "response_calls": simulation.usage["responses"].calls,
                  "label_calls": simulation.usage["labels"].calls},
        "votes": {"descriptions": record.descriptions, "dev_pairs": dev_pairs,
                  "formula_calls": record.descriptions * dev_pairs * 2,
                  "judged_descriptions": record.judged_descriptions,
                  "judged_formula_calls": record.judged_descriptions * record.examples,
                  "measured_calls": selection.usage["selection"].calls, "stopped_early": record.stopped_early,
                  "selected": record.selected, "dev_accuracy": record.accuracy,
                  "tied_best_subsets": len(record.tied_best), "strategy": record.strategy,
                  "subsets_scored": record.subsets_scored},
        "evaluate_formula_calls": {"every_description": len(evaluation.rows) * test_judgments, "selected_judge": 0},
        "evaluation": {"labels": evaluation.labels, "rows": [asdict(row) for row in evaluation.rows],
                       "selected": asdict(evaluation.selected), "tied_best_accuracy": evaluation.tied_best_accuracy,
                       "tied_best_subsets": evaluation.tied_best_subsets, "ranking": asdict(evaluation.ranking)},
    }
    steps = [{"step": step, **asdict(usage), "failures": failures} for step, usage, failures in costs]
    return Measured(steps, own)


def print_tables(result: dict, evaluation: EvaluationOutcome) -> None:
    first, again, votes = result["first_run"], result["rerun_same_cache"], result["first_run"]["votes"]
    print(f"\n**{SIMULATED_NOTE}** Labels: {evaluation.labels}. Model {result['model']}, {first['pairs']['dev']} dev "
          f"and {first['pairs']['test']} test pairs, {result['threads']} threads.\n")
    print("| step | LM calls | prompt tokens | completion tokens | failures |\n|---|---|---|---|---|")
    for row in first["steps"]:
        print(f"| {row['step']} | {row['calls']} | {row['prompt_tokens']} | {row['completion_tokens']} | "
              f"{row['failures']} |")
    print(f"| **demo** | {first['lm_calls']} | {first['prompt_tokens']} | {first['completion_tokens']} | "
          f"{first['failures']} |")
    print(f"\nThe demo's time: server start {result['server_start_seconds']} s + steps {first['wall_seconds']} s "
          f"({', '.join(f'{step} {seconds} s' for step, seconds in first['step_seconds'].items())}).")
    print(f"Judge votes: {votes['measured_calls']} LM calls; descriptions x dev pairs x 2 orders = "
          f"{votes['descriptions']} x {votes['dev_pairs']} x 2 = {votes['formula_calls']}; "
          + (f"stopped early after {votes['judged_descriptions']} of {votes['descriptions']} descriptions "
             f"({votes['judged_formula_calls']} judgments)" if votes["stopped_early"] else "did not stop early")
          + f". Evaluate, every description: {first['evaluate_formula_calls']['every_description']} by the formula.")
    print("\n| judge | accuracy, both orders [95% CI] | consistency | first position [95% CI] | unparseable |\n"
          "|---|---|---|---|---|")
    for row in [*evaluation.rows, evaluation.selected]:
        print(f"| {row.name} | {row.report.accuracy} | {_percent(row.report.consistency)} | {row.first_position} | "
              f"{row.report.parse_failures} |")
    print(f"| tied-best average ({evaluation.tied_best_subsets} subsets) | {_percent(evaluation.tied_best_accuracy)} "
          f"| | | |")
    ranking = evaluation.ranking
    print(f"\n| model | judge wins | Bradley-Terry | reference ({ranking.reference_source}) |\n|---|---|---|---|")
    for model in sorted(ranking.judge_wins, key=lambda name: -ranking.judge_wins[name]):
        reference = ranking.reference.get(model)
        print(f"| {model} | {_percent(ranking.judge_wins[model])} | {ranking.judge_bradley_terry[model]:.3f} | "
              f"{'-' if reference is None else f'{reference:.3f}'} |")
    print("\n| ranked by | Kendall tau | Spearman rho | models |\n|---|---|---|---|")
    for name, correlation in (("wins", ranking.by_wins), ("Bradley-Terry", ranking.by_bradley_terry)):
        print(f"| {name} | {correlation.kendall_tau:.3f} | {correlation.spearman_rho:.3f} | {correlation.models} |")
    print(f"\nRe-run in the same cache: {again['lm_calls']} LM calls (expected 0), {again['wall_seconds']} s.")


def _percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.1f}%"


def main() -> None:
    parser = make_parser(__doc__, "sensejudge_cost.json")
    parser.add_argument("--dialogues", type=Path, default=Path("../shared/data/sensebench"),
                        help="SenseBench's new_sense_bmk.json or its folder")
    parser.add_argument("--dev-dialogues", type=int, default=DEMO_DEFAULTS["dev_dialogues"],
                        help="dialogues whose pairs are dev pairs (the demo's: %(default)s)")
    parser.add_argument("--test-dialogues", type=int, default=DEMO_DEFAULTS["test_dialogues"],
                        help="dialogues whose pairs are test pairs (the demo's: %(default)s)")
    parser.add_argument("--max-pair-descriptions", type=int, default=DEMO_DEFAULTS["max_pair_descriptions"],
                        help="dev pairs that get a description of their own (the demo's: %(default)s)")
    args = parser.parse_args()
    configure_logging()
    evaluations: list[EvaluationOutcome] = []
    with model_endpoint(args) as endpoint:
        scratch = endpoint.scratch
        demo_argv = ["sensejudge", "demo", "--dialogues", str(args.dialogues),
                     "--dev-dialogues", str(args.dev_dialogues), "--test-dialogues", str(args.test_dialogues),
                     "--max-pair-descriptions", str(args.max_pair_descriptions),
                     "--pairs", str(scratch / "pairs.jsonl"), "--judge", str(scratch / "sensejudge.json"),
                     "--output-dir", str(scratch / "out")]
        session = session_settings(args, endpoint)
        job = job_from_flags(cli.make_parser().parse_args(demo_argv), session)
        runs = cold_then_warm(session, lambda: run(session, job, evaluations))
    result = {"dialogues": str(args.dialogues), "labels": "simulated", "labels_note": SIMULATED_NOTE,
              "dev_dialogues": args.dev_dialogues, "test_dialogues": args.test_dialogues,
              "max_pair_descriptions": args.max_pair_descriptions, "variants": list(job.simulation.variants),
              "threads": args.threads, "model": session.task.model, "server_start_seconds": endpoint.start_seconds,
              **runs}
    write_result(args.output, result)
    print_tables(result, evaluations[0])
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
