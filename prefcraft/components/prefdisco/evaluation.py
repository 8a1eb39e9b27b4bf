"""`prefcraft prefdisco evaluate`: Baseline, Discovery and Oracle on the same scenarios, in the one MLflow run that the
runner opens (`prefdisco-evaluate`, its params `evaluation_params`).

Baseline answers from the problem alone; Oracle answers with the hidden profile given up front; Discovery is the
question asker (uncompiled, and the compiled one when there is one) eliciting from the passive user simulator within
its turn budget (or, with `forced_questions`, for exactly that many turns: the paper's Figure 5), then answering. Each
condition is a child run in two steps through `evaluate_program`, scenarios in parallel: generation (the asker on the
task model, the simulator on the judge model), then grading on the judge model (one call per rubric criterion, one
correctness call). Per scenario: PrefAlign per condition (missing grades count as 1 and are counted). Per task and
Discovery variant: NormAlign of the conditions' means (the paper's Table 2) and, beside it, the mean of per-scenario
NormAlign (undefined where Oracle equals Baseline, counted); over all tasks, the share of tasks whose NormAlign is
negative (the paper's 29.0% figure is this share over model-task pairs). Every dialogue, with its hidden profile,
grades and scores, goes to `dialogues.jsonl` under the output directory; the summary to `summary.json`; both are
logged to that run.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, get_args

import dspy

from prefcraft.components.component import StepRun
from prefcraft.components.prefdisco.data import Scenario, load_scenarios, split_scenarios
from prefcraft.components.prefdisco.metrics import (
    ConditionScores,
    grade_pref_align,
    grading_example,
    missing_grades,
    negative_count,
    norm_align,
    summarize_norm_align,
)
from prefcraft.components.prefdisco.options import ConditionsOptions, DataOptions
from prefcraft.components.prefdisco.results import (
    ConditionResult,
    ConditionSummary,
    EvaluationOutcome,
    ResponseScore,
)
from prefcraft.engine.evaluation import StepCost, degenerate_outputs, evaluate_program, in_chunks
from prefcraft.engine.item_failures import FailureLog
from prefcraft.engine.session import lm_context
from prefcraft.errors import ConfigError
from prefcraft.metrics.stats import bootstrap_mean
from prefcraft.optimizers.artifacts import load_compiled, shipped_compiled
from prefcraft.optimizers.prefdisco import PROGRAM_NAME, asker_example
from prefcraft.options import SplitOrAll
from prefcraft.programs.prefdisco import (
    CORRECTNESS_TEMPERATURE,
    GREEDY_CORRECTNESS_TEMPERATURE,
    FixedQuestionAsker,
    QuestionAsker,
    Responder,
    RubricGrader,
    SimulatedUser,
    UserSimulator,
)
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, data_digest, model_params

logger = logging.getLogger(__name__)

SPLITS: tuple[str, ...] = get_args(SplitOrAll)
BASELINE, ORACLE, DISCOVERY, COMPILED = "baseline", "oracle", "discovery", "discovery (compiled)"


def load_evaluated(options: ConditionsOptions) -> list[Scenario]:
    """The scenarios the evaluation reads, before any model starts."""
    scenarios = select_scenarios(options, options.split)
    if not scenarios:
        raise ConfigError(f"no scenarios in split '{options.split}' of {options.source}")
    return scenarios


def evaluate(options: ConditionsOptions, run: StepRun) -> EvaluationOutcome:
    return evaluate_conditions(run.session, run.tracker, options, run.loaded)


def evaluation_params(options: ConditionsOptions, run: StepRun) -> dict[str, Any]:
    """The params of the `prefdisco-evaluate` run: the data, the scenarios `load` read, the conditions' settings, the
    compiled asker compared (if any) and the models."""
    compiled = compiled_asker(options, run.session, warn=False)  # the work looks it up again, and warns then
    return {"program": PROGRAM_NAME, "data": str(options.source), "data_digest": data_digest(options.source),
            "split": options.split, "scenarios": len(run.loaded), "max_turns": options.max_turns,
            "forced_questions": options.forced_questions, "collaborative": options.collaborative,
            "correctness_temperature": correctness_temperature(options),
            "compiled": str(compiled or ""), **model_params(run.session)}


def compiled_asker(options: ConditionsOptions, session: Settings, *, warn: bool = True) -> Path | None:
    """The compiled asker to compare: `--compiled`, else (unless `--no-shipped`) the one shipped for the task model."""
    if options.compiled or not options.use_shipped:
        return options.compiled
    return shipped_compiled(PROGRAM_NAME, session.task.model, warn=warn)


def select_scenarios(data: DataOptions, split: str) -> list[Scenario]:
    """The scenarios of `split` (see `split_scenarios`), at most `max_per_task` of each task (the first ones), then
    `max_scenarios` in all."""
    if split not in SPLITS:
        raise ConfigError(f"unknown split '{split}'", f"choose one of {', '.join(SPLITS)}")
    scenarios = load_scenarios(data.source)
    if split != "all":
        scenarios = split_scenarios(scenarios, split, val_share=data.val_share, test_share=data.test_share,
                                    source=data.source)
    if data.max_per_task is not None:
        scenarios = [s for s in scenarios
                     if [t.scenario_id for t in scenarios if t.task == s.task].index(s.scenario_id) < data.max_per_task]
    return scenarios[: data.max_scenarios] if data.max_scenarios is not None else scenarios


def simulated_users(session: Settings, scenarios: Sequence[Scenario], collaborative: bool = False
                    ) -> list[SimulatedUser]:
    simulate = user_simulation(session, collaborative)
    return [simulate(s) for s in scenarios]


def user_simulation(session: Settings, collaborative: bool = False) -> Callable[[Scenario], SimulatedUser]:
    """A scenario's simulated user; every user it makes shares one simulator, on the judge model."""
    simulator, context = UserSimulator(collaborative), partial(lm_context, session, "judge")
    return lambda scenario: SimulatedUser(scenario.scenario_id, scenario.hidden_profile(), simulator, context)


def discovery_asker(max_turns: int, forced_questions: int | None = None) -> QuestionAsker | FixedQuestionAsker:
    """The asker that decides when to answer, or with `forced_questions` the one that asks exactly that many."""
    return QuestionAsker(max_turns) if forced_questions is None else FixedQuestionAsker(forced_questions)


def load_asker(path: Path, max_turns: int, forced_questions: int | None = None) -> QuestionAsker | FixedQuestionAsker:
    """The compiled asker at `path`. Compiling tunes the turn decision and the final answer; with `forced_questions`
    there is no decision, so the fixed-count asker keeps its own question prompt and takes the compiled final answer."""
    compiled = QuestionAsker(max_turns)
    load_compiled(compiled, path, program_name=PROGRAM_NAME)
    if forced_questions is None:
        return compiled
    asker = FixedQuestionAsker(forced_questions)
    asker.answer = compiled.answer
    return asker


def evaluate_conditions(session: Settings, tracker: StepTracker, options: ConditionsOptions,
                        scenarios: Sequence[Scenario]) -> EvaluationOutcome:
    """Every condition on `scenarios`, each in a child run of the step's run; the dialogues, the summary and its figures
    go to the step's run. The dialogues are written as each chunk of scenarios ends, and only their scores are kept."""
    compiled = compiled_asker(options, session)
    simulated_user = user_simulation(session, options.collaborative)

    def elicited(scenario: Scenario) -> dspy.Example:
        return asker_example(scenario.scenario_id, scenario.question, simulated_user(scenario))

    conditions: dict[str, tuple[dspy.Module, Callable[[Scenario], dspy.Example]]] = {
        BASELINE: (Responder(), _baseline_example),
        ORACLE: (Responder(), _oracle_example),
        DISCOVERY: (discovery_asker(options.max_turns, options.forced_questions), elicited),
    }
    if compiled is not None:
        conditions[COMPILED] = (load_asker(compiled, options.max_turns, options.forced_questions), elicited)
    results: dict[str, list[ResponseScore]] = {}
    costs: dict[str, dict[str, StepCost]] = {}
    results_path = options.output_dir / "dialogues.jsonl"
    with tracker.results_appender(results_path) as write:
        for condition, (program, example) in conditions.items():
            with tracker.child(slug(condition), {"condition": condition}):
                results[condition], costs[condition] = run_condition(
                    session, condition, program, example, scenarios, correctness_temperature(options), write)
                tracker.log_metrics({f"{step}_{name}": value for step, cost in costs[condition].items()
                                     for name, value in _cost_metrics(cost).items()})
    summaries = summarize(results, session.seed)
    outcome = EvaluationOutcome(len(scenarios), options.split, summaries, costs, results_path,
                                sum(row.failed is not None for rows in results.values() for row in rows))
    _write_summary(tracker, outcome, results, options.output_dir)
    logger.info("wrote %d dialogues to %s", sum(map(len, results.values())), results_path)
    return outcome


def correctness_temperature(options: ConditionsOptions) -> float:
    return GREEDY_CORRECTNESS_TEMPERATURE if options.greedy_correctness else CORRECTNESS_TEMPERATURE


def run_condition(session: Settings, condition: str, program: dspy.Module, example: Callable[[Scenario], dspy.Example],
                  scenarios: Sequence[Scenario], correctness_temperature: float, write: Callable[[Iterable[Any]], None]
                  ) -> tuple[list[ResponseScore], dict[str, StepCost]]:
    """Generate one response per scenario, then grade each, a chunk of scenarios at a time (`in_chunks`): each chunk's
    rows go to `write` when it ends (failed rows too, each with its error), and only their scores are kept."""
    scores: list[ResponseScore] = []
    costs: dict[str, StepCost] = {}
    for chunk in in_chunks(scenarios):
        rows, chunk_costs = _run_chunk(session, condition, program, [example(s) for s in chunk], chunk,
                                       correctness_temperature)
        write(map(asdict, rows))
        scores.extend(row.score() for row in rows)
        costs = {step: costs[step] + cost if step in costs else cost for step, cost in chunk_costs.items()}
    return scores, costs


def _run_chunk(session: Settings, condition: str, program: dspy.Module, examples: Sequence[dspy.Example],
               scenarios: Sequence[Scenario], correctness_temperature: float
               ) -> tuple[list[ConditionResult], dict[str, StepCost]]:
    started, generator = time.perf_counter(), FailureLog(program)
    with lm_context(session, "task"):
        generated, generation_usage = evaluate_program(generator, examples, _generated,
                                                       model=session.task, num_threads=session.threads)
    generation = StepCost(generation_usage, time.perf_counter() - started,
                          sum(prediction is None for _, prediction, _ in generated),
                          degenerate_outputs(program, generated))
    answered = [(scenario, prediction) for scenario, (_, prediction, _) in zip(scenarios, generated, strict=True)
                if prediction is not None]
    started, grader = time.perf_counter(), FailureLog(RubricGrader(correctness_temperature))
    with lm_context(session, "judge"):
        graded, grading_usage = evaluate_program(
            grader, [grading_example(s, p.response, p.final_answer) for s, p in answered],
            grade_pref_align, model=session.model_for("judge"), num_threads=session.threads)
    grading = StepCost(grading_usage, time.perf_counter() - started,
                       sum(prediction is None for _, prediction, _ in graded), degenerate_outputs(grader, graded))
    grades = {example.scenario_id: (prediction, score) for example, prediction, score in graded}
    predictions = {s.scenario_id: p for s, p in answered}
    failed_generations = [(scenario, example) for scenario, (example, prediction, _)
                          in zip(scenarios, generated, strict=True) if prediction is None]
    reasons = {**{scenario.scenario_id: generator.reason(example) for scenario, example in failed_generations},
               **{example.scenario_id: grader.reason(example)
                  for example, prediction, _ in graded if prediction is None}}
    rows = [_result(condition, s, predictions.get(s.scenario_id), grades.get(s.scenario_id),
                    reasons.get(s.scenario_id)) for s in scenarios]
    return rows, {"generation": generation, "grading": grading}


def summarize(results: dict[str, list[ResponseScore]], seed: int) -> list[ConditionSummary]:
    """Per task (and over all tasks) and condition; NormAlign for each Discovery variant against Baseline/Oracle."""
    tasks = sorted({row.task for rows in results.values() for row in rows})
    summaries = []
    for task in [*tasks, "all"] if len(tasks) > 1 else tasks:
        for condition, rows in results.items():
            kept = [row for row in rows if task in ("all", row.task)]
            scored = [row for row in kept if row.pref_align is not None]
            generated = [row for row in kept if row.failed != "generation"]
            normalized = None
            if condition not in (BASELINE, ORACLE):
                normalized = summarize_norm_align(_condition_scores(kept, results), seed=seed)
            summaries.append(ConditionSummary(
                task=task, condition=condition,
                pref_align=bootstrap_mean([row.pref_align for row in scored], seed=seed),
                accuracy=bootstrap_mean([float(bool(row.correct)) for row in scored], seed=seed),
                questions=sum(row.questions for row in generated) / len(generated) if generated else float("nan"),
                failures=len(kept) - len(scored), missing_grades=sum(row.missing_grades for row in scored),
                norm_align=normalized))
    return _with_negative_tasks(summaries, tasks)


def _with_negative_tasks(summaries: list[ConditionSummary], tasks: Sequence[str]) -> list[ConditionSummary]:
    """The paper's negative share: on each Discovery variant's row over all tasks (its only row when there is one
    task), how many of the tasks' NormAligns of means are negative."""
    overall = "all" if len(tasks) > 1 else tasks[0]
    for item in summaries:
        if item.norm_align is not None and item.task == overall:
            item.negative_tasks = negative_count([other.norm_align.of_means.mean for other in summaries
                                                  if other.condition == item.condition and other.task in tasks])
    return summaries


def _paired(rows: Sequence[ResponseScore], results: dict[str, list[ResponseScore]]
            ) -> dict[str, tuple[float, float, float]]:
    """(discovery, baseline, oracle) PrefAlign per scenario (by id) of `rows` scored in all three conditions."""
    baseline = {row.scenario_id: row.pref_align for row in results[BASELINE]}
    oracle = {row.scenario_id: row.pref_align for row in results[ORACLE]}
    paired = {}
    for row in rows:
        anchors = baseline.get(row.scenario_id), oracle.get(row.scenario_id)
        if row.pref_align is not None and None not in anchors:
            paired[row.scenario_id] = (row.pref_align, *anchors)
    return paired


def _condition_scores(rows: Sequence[ResponseScore], results: dict[str, list[ResponseScore]]) -> ConditionScores:
    triples = list(_paired(rows, results).values())
    return ConditionScores(*(tuple(column) for column in zip(*triples, strict=True))) if triples else \
        ConditionScores((), (), ())


def _norm_aligns(rows: Sequence[ResponseScore], results: dict[str, list[ResponseScore]]
                 ) -> dict[str, float | None]:
    """NormAlign per scenario (by id) whose three conditions were all scored; None where it is undefined."""
    return {scenario_id: norm_align(*triple) for scenario_id, triple in _paired(rows, results).items()}


def slug(condition: str) -> str:
    """A condition's name as MLflow run and metric names take it: "discovery (compiled)" -> "discovery_compiled"."""
    return re.sub(r"[^a-z0-9]+", "_", condition.lower()).strip("_")


def _baseline_example(scenario: Scenario) -> dspy.Example:
    return _responder_example(scenario, "")


def _oracle_example(scenario: Scenario) -> dspy.Example:
    return _responder_example(scenario, scenario.hidden_profile())


def _responder_example(scenario: Scenario, known: str) -> dspy.Example:
    return dspy.Example(scenario_id=scenario.scenario_id, problem=scenario.question,
                        user_preferences=known).with_inputs("problem", "user_preferences")


def _generated(example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float:
    return 1.0  # generation is scored in the grading step


def _result(condition: str, scenario: Scenario, prediction: dspy.Prediction | None,
            graded: tuple[dspy.Prediction | None, float] | None, failure: str | None) -> ConditionResult:
    grades = graded[0] if graded else None
    failed = "generation" if prediction is None else "grading" if grades is None else None
    return ConditionResult(
        scenario_id=scenario.scenario_id, task=scenario.task, condition=condition,
        response=getattr(prediction, "response", None), final_answer=getattr(prediction, "final_answer", None),
        turns=list(getattr(prediction, "turns", None) or []),
        hidden_profile=scenario.hidden_profile(), grades=list(grades.grades) if grades else None,
        justifications=list(grades.justifications) if grades else None,
        correct=bool(grades.correct) if grades else None, pref_align=graded[1] if grades else None, failed=failed,
        failure=failure if failed else None,
        missing_grades=missing_grades(grades.grades) if grades else 0)


def _cost_metrics(cost: StepCost) -> dict[str, float]:
    return {**cost.usage.as_metrics(), "seconds": cost.seconds, "failures": float(cost.failures)}


def _write_summary(tracker: StepTracker, outcome: EvaluationOutcome, results: dict[str, list[ResponseScore]],
                   output_dir: Path) -> None:
    """The summary (JSON), logged to the run; its figures as the run's metrics."""
    per_scenario = {condition: _norm_aligns(rows, results)
                    for condition, rows in results.items() if condition not in (BASELINE, ORACLE)}
    summary = {"scenarios": outcome.scenarios, "split": outcome.split,
               "summaries": [asdict(summary) for summary in outcome.summaries], "norm_align": per_scenario,
               "costs": {condition: {step: asdict(cost) for step, cost in steps.items()}
                         for condition, steps in outcome.costs.items()}}
    tracker.write_json(output_dir / "summary.json", summary)
    metrics = {}
    for item in outcome.summaries:
        prefix = f"{item.task}_{slug(item.condition)}_"
        metrics.update({f"{prefix}pref_align": item.pref_align.mean, f"{prefix}accuracy": item.accuracy.mean,
                        f"{prefix}questions": item.questions, f"{prefix}failures": float(item.failures),
                        f"{prefix}missing_grades": float(item.missing_grades)})
        if item.norm_align is not None:
            metrics.update({f"{prefix}norm_align": item.norm_align.of_means.mean,
                            f"{prefix}norm_align_per_scenario": item.norm_align.per_scenario.mean,
                            f"{prefix}norm_align_negative_share": item.norm_align.per_scenario_negative_share.mean,
                            f"{prefix}norm_align_undefined": float(item.norm_align.undefined)})
        if item.negative_tasks is not None:
            negative, defined = item.negative_tasks
            metrics.update({f"{prefix}norm_align_negative_tasks": float(negative),
                            f"{prefix}norm_align_defined_tasks": float(defined)})
    tracker.log_metrics({name: value for name, value in metrics.items() if value == value})  # NaN: nothing to measure
