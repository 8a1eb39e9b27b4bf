"""What SenseJudge's demo costs per step against the vote formula, per topic; and what a re-run costs.

Runs `prefcraft sensejudge demo` (its work, on the options its own flags and defaults make) on real SenseBench
requests whose labels are SIMULATED (an LLM annotator given a persona, not a person), in a fresh DSPy cache, then
again in the same cache. The demo writes and selects descriptions per topic. Reports:
- per step (simulate: responses and simulated labels; select, per topic: the candidate descriptions, then every dev
  pair of the topic under every description in both orders, the subsets scored from those votes; evaluate: every
  candidate description on its topic's test pairs, then the selected judge): LM requests, prompt and completion
  tokens, failed calls or parses, and the wall seconds of each command step;
- per topic and in all, the vote calls against descriptions x dev pairs x 2 orders, and whether selection stopped
  early (once a subset is right on every dev judgment) and after how many descriptions;
- the evaluation: for no description, each single description, the selected subsets and the tied-best average, the
  accuracy per topic, Overall (the mean of the topics, the paper's figure) beside the pooled accuracy over both orders
  [95% interval], consistency and position bias; the models ranked by the judge's wins and by Bradley-Terry, with
  Kendall's tau and Spearman's rho against the annotator's ranking;
- the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics);
- the whole demo again in the same cache: its LM requests (expected 0).

Run: .venv/bin/python benchmarks/sensejudge_cost.py [--sensebench ../shared/data/sensebench] [--threads 4]
    [--task-api-base URL] [--topics QA Math] [--dev-dialogues N] [--test-dialogues N] [--max-pair-descriptions N]
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from harness import (
    Measured,
    cold_then_warm,
    configure_logging,
    make_parser,
    model_endpoint,
    session_settings,
    write_result,
)
from pydantic import create_model

from prefcraft.components.component import StepRun
from prefcraft.components.sensejudge.commands import COMPONENT
from prefcraft.components.sensejudge.data import Dialogue
from prefcraft.components.sensejudge.demo import demo
from prefcraft.components.sensejudge.options import DemoOptions
from prefcraft.components.sensejudge.report import SIMULATED_NOTE, format_demo
from prefcraft.components.sensejudge.results import (
    EvaluationOutcome,
    JudgeRow,
    SelectionOutcome,
    SimulationSummary,
)
from prefcraft.components.sensejudge.simulate import read_simulated
from prefcraft.flags import parse_step
from prefcraft.options import Options, add_option_flags
from prefcraft.runner import open_step_run
from prefcraft.settings import Settings
from prefcraft.tracking.runs import MLflowTracker, StepTracker

STEPS = ["simulate", "select", "evaluate"]  # what `prefcraft sensejudge demo` runs
DEMO_FLAGS = ("topics", "dev_dialogues", "test_dialogues", "max_pair_descriptions")
"""The demo's options the benchmark takes, with the demo's own defaults, types and bounds."""
DemoFlags = create_model("DemoFlags", __base__=Options, **{
    name: (DemoOptions.model_fields[name].annotation, DemoOptions.model_fields[name]) for name in DEMO_FLAGS})


class TimedTracker(MLflowTracker):
    """MLflow runs, each top-level one timed: the demo has the runner open one per step (`StepRun.open_step`)."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds: dict[str, float] = {}

    @contextmanager
    def run(self, name: str, params: Mapping[str, Any] | None = None, *, nested: bool = False) -> Iterator[Any]:
        started = time.perf_counter()
        with super().run(name, params, nested=nested) as active:
            yield active
        if not nested:
            self.seconds[name.removeprefix("sensejudge-")] = round(time.perf_counter() - started, 1)


def run(session: Settings, options: DemoOptions, dialogues: list[Dialogue],
        evaluations: list[EvaluationOutcome]) -> Measured:
    """The demo's three steps once, in the session's cache: per-step cost, the vote counts and the evaluation (also
    appended to `evaluations`, for the tables)."""
    tracker = TimedTracker()
    opener = partial(open_step_run, COMPONENT, tracker)  # as `prefcraft.runner.run_step` runs the demo
    step_run = StepRun(session, session, StepTracker(tracker), logging.getLogger("sensejudge").info, dialogues, opener)
    with opener("demo", options, step_run):  # the demo declares no run of its own: each step opens its own
        outcome = demo(options, step_run)
    logging.getLogger("sensejudge").info("\n%s", format_demo(outcome))
    simulation, selection, evaluation = outcome.simulation, outcome.selection, outcome.evaluation
    evaluations.append(evaluation)
    records = selection.records
    costs = [("simulate: responses and labels", simulation.usage["responses"] + simulation.usage["labels"],
              simulation.failed_responses + simulation.failed_labels)]
    for topic, topic_selection in selection.topics.items():  # a failed extraction call stops select
        costs += [(f"select, {topic}: extract descriptions", topic_selection.usage["extraction"], 0),
                  (f"select, {topic}: judge votes, subset search", topic_selection.usage["selection"],
                   records[topic].failed_calls)]
    costs += [("evaluate: every description", evaluation.usage["every_description"],
               sum(row.report.parse_failures for row in evaluation.rows)),
              ("evaluate: selected judge", evaluation.usage["selected_judge"],
               evaluation.selected.report.parse_failures)]
    votes = _votes(selection, simulation)
    own = {
        "step_seconds": {step: tracker.seconds[step] for step in STEPS},
        "pairs": {"dev": simulation.dev_pairs, "test": simulation.test_pairs, "topics": simulation.topics,
                  "dialogues": simulation.dialogues, "replaced_dialogues": simulation.replaced_dialogues,
                  "identical_pairs": simulation.identical_pairs,
                  "response_calls": simulation.usage["responses"].calls,
                  "label_calls": simulation.usage["labels"].calls},
        "votes": {"topics": votes, "total": _total_votes(votes, selection)},
        "evaluate_formula_calls": {"every_description": sum(topic["evaluate_formula_calls"]
                                                            for topic in votes.values()),
                                   "selected_judge": 0},
        "evaluation": {"labels": evaluation.labels, "rows": [_row(row) for row in evaluation.rows],
                       "selected": _row(evaluation.selected), "reference_scores": evaluation.reference_scores,
                       "reference_strategies": evaluation.reference_strategies, "headline": evaluation.headline,
                       "reference_subsets": evaluation.reference_subsets, "ranking": asdict(evaluation.ranking)},
    }
    steps = [{"step": step, **asdict(usage), "failures": failures} for step, usage, failures in costs]
    return Measured(steps, own)


def _votes(selection: SelectionOutcome, simulation: SimulationSummary) -> dict[str, dict[str, Any]]:
    """Each selection's (topic's) vote calls, measured and by the formula, and what it selected."""
    votes = {}
    for topic, record in selection.records.items():
        dev_pairs = record.examples // 2
        # one selection over all dev pairs (scope "all") is judged on every test pair
        _, test_pairs = simulation.topics.get(topic, (simulation.dev_pairs, simulation.test_pairs))
        votes[topic] = {
            "descriptions": record.descriptions, "dev_pairs": dev_pairs,
            "formula_calls": record.descriptions * dev_pairs * 2, "judged_descriptions": record.judged_descriptions,
            "judged_formula_calls": record.judged_descriptions * record.examples,
            "measured_calls": selection.topics[topic].usage["selection"].calls, "stopped_early": record.stopped_early,
            "selected": record.selected, "dev_accuracy": record.accuracy, "tied_best_subsets": len(record.tied_best),
            "strategy": record.strategy, "subsets_scored": record.subsets_scored, "test_pairs": test_pairs,
            "evaluate_formula_calls": record.descriptions * test_pairs * 2,
        }  # fmt: skip
    return votes


def _total_votes(votes: dict[str, dict[str, Any]], selection: SelectionOutcome) -> dict[str, Any]:
    """The topics' vote calls added up; the dev accuracy is their mean."""
    counts = ("descriptions", "dev_pairs", "formula_calls", "judged_descriptions", "judged_formula_calls",
              "measured_calls", "tied_best_subsets", "subsets_scored", "test_pairs", "evaluate_formula_calls")
    return {**{key: sum(topic[key] for topic in votes.values()) for key in counts},
            "stopped_early": any(topic["stopped_early"] for topic in votes.values()),
            "dev_accuracy": selection.dev_accuracy}


def _row(row: JudgeRow) -> dict[str, Any]:
    return {**asdict(row), "overall": row.overall}


def print_tables(result: dict, evaluation: EvaluationOutcome) -> None:
    first, again = result["first_run"], result["rerun_same_cache"]
    pairs, votes = first["pairs"], first["votes"]
    per_topic = ", ".join(f"{topic} {dev} + {test}" for topic, (dev, test) in pairs["topics"].items())
    print(f"\n**{SIMULATED_NOTE}** Labels: {evaluation.labels}. Model {result['model']}, {pairs['dev']} dev and "
          f"{pairs['test']} test pairs ({per_topic}), descriptions selected "
          f"{'per topic' if result['scope'] == 'topic' else 'once over all dev pairs'}, {result['threads']} "
          f"threads.\n")
    print("| step | LM calls | prompt tokens | completion tokens | failures |\n|---|---|---|---|---|")
    for row in first["steps"]:
        print(f"| {row['step']} | {row['calls']} | {row['prompt_tokens']} | {row['completion_tokens']} | "
              f"{row['failures']} |")
    print(f"| **demo** | {first['lm_calls']} | {first['prompt_tokens']} | {first['completion_tokens']} | "
          f"{first['failures']} |")
    print(f"\nThe demo's time: server start {result['server_start_seconds']} s + steps {first['wall_seconds']} s "
          f"({', '.join(f'{step} {seconds} s' for step, seconds in first['step_seconds'].items())}).")
    print("\n| judge votes | descriptions x dev pairs x 2 orders | LM calls | stopped early | evaluate: descriptions x "
          "test pairs x 2 |\n|---|---|---|---|---|")
    for topic, count in votes["topics"].items():
        stopped = (f"after {count['judged_descriptions']} of {count['descriptions']} ({count['judged_formula_calls']} "
                   f"judgments)" if count["stopped_early"] else "no")
        print(f"| {topic} | {count['descriptions']} x {count['dev_pairs']} x 2 = {count['formula_calls']} | "
              f"{count['measured_calls']} | {stopped} | {count['descriptions']} x {count['test_pairs']} x 2 = "
              f"{count['evaluate_formula_calls']} |")
    total = votes["total"]
    stopped = f"{total['judged_formula_calls']} judgments" if total["stopped_early"] else "no"
    print(f"| **all** | {total['formula_calls']} | {total['measured_calls']} | {stopped} | "
          f"{total['evaluate_formula_calls']} |")
    topics = list(evaluation.selected.topics)
    print("\n| judge | Overall | pooled accuracy, both orders [95% CI] | consistency | first position [95% CI] | "
          "unparseable |\n|---|---|---|---|---|---|")
    for row in [*evaluation.rows, evaluation.selected]:
        print(f"| {row.name} | {_percent(row.overall)} | {row.report.accuracy} | {_percent(row.report.consistency)} "
              f"| {row.first_position} | {row.report.parse_failures} |")
    print(f"| headline: the reference's mean over {evaluation.reference_subsets} subsets | "
          f"{_percent(evaluation.headline)} | | | | |")
    print(f"\n| judge | {' | '.join(topics)} | Overall |\n|---|{'---|' * len(topics)}---|")
    table = [(row.name, row.topics, row.overall) for row in [*evaluation.rows, evaluation.selected]]
    table.append(("headline (reference's mean)", evaluation.reference_scores, evaluation.headline))
    for name, accuracies, overall in table:
        print(f"| {name} | {' | '.join(_percent(accuracies.get(topic, math.nan)) for topic in topics)} | "
              f"{_percent(overall)} |")
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


def demo_argv(args: argparse.Namespace, scratch: Path) -> list[str]:
    """The demo's command line: the SenseBench file, the demo flags given here, every file it writes in `scratch`."""
    given = [item for name in DEMO_FLAGS for item in _flag(name, getattr(args, name))]
    return ["--sensebench", str(args.sensebench), *given, "--data", str(scratch / "pairs.jsonl"),
            "--judge-file", str(scratch / "sensejudge.json"), "--output-dir", str(scratch / "out")]


def _flag(name: str, value: Any) -> list[str]:
    return [f"--{name.replace('_', '-')}", *map(str, value if isinstance(value, list) else [value])]


def main() -> None:
    parser = make_parser(__doc__, "sensejudge_cost.json")
    parser.add_argument("--sensebench", type=Path, default=Path("../shared/data/sensebench"),
                        help="SenseBench's new_sense_bmk.json or its folder")
    add_option_flags(parser.add_argument_group(
        "the demo's options", "as `prefcraft sensejudge demo` takes them, with its defaults: " + " ".join(
            " ".join(_flag(name, field.default)) for name, field in DemoFlags.model_fields.items())), DemoFlags)
    args = parser.parse_args()
    configure_logging()
    evaluations: list[EvaluationOutcome] = []
    with model_endpoint(args) as endpoint:
        session = session_settings(args, endpoint)
        options = parse_step(COMPONENT, "demo", demo_argv(args, endpoint.scratch))
        dialogues = read_simulated(options)
        runs = cold_then_warm(session, lambda: run(session, options, dialogues, evaluations))
    result = {"sensebench": str(args.sensebench), "labels": "simulated", "labels_note": SIMULATED_NOTE,
              **{name: getattr(options, name) for name in DEMO_FLAGS}, "scope": options.scope,
              "variants": options.response_models, "threads": args.threads, "model": session.task.model,
              "server_start_seconds": endpoint.start_seconds, **runs}
    write_result(args.output, result)
    print_tables(result, evaluations[0])
    print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
