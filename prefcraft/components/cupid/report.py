"""Plain-text tables of CUPID's results for the terminal."""

from __future__ import annotations

import math

from prefcraft.components.cupid.data import SAMPLE_INSTANCES
from prefcraft.components.cupid.results import CupidCompileOutcome, EvaluationOutcome
from prefcraft.engine.evaluation import StepCost
from prefcraft.metrics.stats import Estimate
from prefcraft.optimizers.compile_selection import format_verdict

JUDGE_PROMPTS = {"reference": "the reference code's prompt (a label for each score, given before the score)",
                 "paper": "the paper's prompt (Figure 16, no labels)"}
OVERFLOW_RULES = {"zero": "keeps its instance, with an empty checklist (recall 0) and a response judged 0, as the "
                           "reference code does (context overflow)",
                  "leave-out": "leaves its instance out (counted as a failed inference or generation)"}
RESPONSE_ROWS = {"baseline": "baseline (no user context)"}
"""The printed row of a response method whose name alone does not say what the response was given."""
SYNTHETIC_NOTE = "The bundled instances are SYNTHETIC (a seeded template generator): not comparable with the paper."


def format_evaluation(outcome: EvaluationOutcome) -> str:
    lines = [f"CUPID on {outcome.instances} {outcome.split} instances of {outcome.data} ({outcome.skipped} invalid "
             "rows skipped); P / R / F1 pooled over instances (micro, the paper's), per-instance mean F1 beside it, "
             "95% bootstrap intervals over instances. Failures as the reference code counts them: a failed "
             "inference is left out (inference failed), a failed matcher scores its items Not covered (matcher "
             "failed), a missing label is Not covered (labels missing); a prompt over the context window "
             f"{OVERFLOW_RULES[outcome.context_overflow]}; each failure's reason is in the results files"]
    if outcome.data == str(SAMPLE_INSTANCES):
        lines.append(f"  {SYNTHETIC_NOTE}")
    if outcome.oracle_left_out is not None:
        lines.append("  Oracle setting (the paper's Table 1 and Table 3 Oracle columns): each instance's prior "
                     "sessions are only those that share its current preference; instances without one left out: "
                     f"{outcome.oracle_left_out}")
    names = max([20, *(len(inference.name) for inference in outcome.inference),
                 *(len(_response_row(response.method)) for response in outcome.responses)])
    lines.append(f"{'inferrer':<{names}} {'type':<12} {'n':>3} {'precision':<20} {'recall':<20} {'F1 (micro)':<20} "
                 f"{'mean F1':<20} {'inference failed':>16} {'context overflow':>16} {'matcher failed':>14} "
                 f"{'labels missing':>14}")
    for inference in outcome.inference:
        for kind, report in [("all", inference.overall), *inference.by_type.items()]:
            lines.append(f"{inference.name:<{names}} {kind:<12} {report.instances:>3} {_percent(report.precision):<20} "
                         f"{_percent(report.recall):<20} {_percent(report.f1):<20} {_percent(report.mean_f1):<20} "
                         f"{report.inference_failures:>16} {report.context_overflows:>16} "
                         f"{report.matcher_failures:>14} {report.missing_labels:>14}")
    if outcome.responses:
        lines.append(f"Responses judged with {JUDGE_PROMPTS[outcome.judge_prompt]}; mean judge score over all "
                     "instances and per instance type (the paper's Table 3 columns)")
        lines.append(f"{'response method':<{names}} {'type':<12} {'judge score 1-10 [95% CI]':<28} "
                     f"{'judge failed (0)':>16} {'unparseable (0)':>15} {'context overflow (0)':>20} "
                     f"{'generation failed (left out)':>28}")
        for response in outcome.responses:
            for kind, scores in [("all", response.overall), *response.by_type.items()]:
                lines.append(f"{_response_row(response.method):<{names}} {kind:<12} {_score(scores.score):<28} "
                             f"{scores.judge_failures:>16} {scores.unparseable:>15} {scores.context_overflows:>20} "
                             f"{scores.generation_failures:>28}")
    costs = _costs_by_step(outcome)
    steps = max([28, *(len(name) for name in costs)])
    lines.append(f"  {'cost per instance, by step':<{steps}} {'LM calls':>8} {'prompt tok':>10} {'compl. tok':>10} "
                 f"{'seconds':>8}  failures / degenerate (all instances)")
    for name, cost in costs.items():
        lines.append(f"  {name:<{steps}} {_per_instance(cost, outcome.instances)}")
    lines.append(f"results: {outcome.results_dir}")
    return "\n".join(lines)


def format_compile(outcome: CupidCompileOutcome) -> str:
    lines = [
        f"{outcome.optimizer} over the '{outcome.inferrer}' inferrer: {outcome.train} train / {outcome.val} validation "
        "instances",
        format_verdict(outcome.verdict, "F1 (per-instance mean)"),
        f"  LM calls {outcome.usage.calls}, prompt tokens {outcome.usage.prompt_tokens}, completion tokens "
        f"{outcome.usage.completion_tokens}",
    ]
    return "\n".join(lines)


def _response_row(method: str) -> str:
    return RESPONSE_ROWS.get(method, method)


def _percent(estimate: Estimate) -> str:
    return _interval(estimate, scale=100, digits=1)


def _score(estimate: Estimate) -> str:
    return f"{_interval(estimate, scale=1, digits=2)} (n={estimate.n})" if estimate.n else "-"


def _interval(estimate: Estimate, *, scale: float, digits: int) -> str:
    """`mean [low, high]`, or only the mean when there was nothing to resample, or `-` when nothing was measured."""
    if math.isnan(estimate.mean):
        return "-"
    mean = f"{scale * estimate.mean:.{digits}f}"
    if math.isnan(estimate.low):
        return mean
    return f"{mean} [{scale * estimate.low:.{digits}f}, {scale * estimate.high:.{digits}f}]"


def _costs_by_step(outcome: EvaluationOutcome) -> dict[str, StepCost]:
    steps = {f"{inference.name}: {step}": cost for inference in outcome.inference
             for step, cost in inference.costs.items()}
    steps.update({f"respond {response.method}: {step}": cost for response in outcome.responses
                  for step, cost in response.costs.items()})
    return steps


def _per_instance(cost: StepCost, instances: int) -> str:
    n, usage = max(instances, 1), cost.usage
    return (f"{usage.calls / n:8.2f} {usage.prompt_tokens / n:10.1f} {usage.completion_tokens / n:10.1f} "
            f"{cost.seconds / n:8.1f}  {cost.failures} / {cost.degenerate}")
