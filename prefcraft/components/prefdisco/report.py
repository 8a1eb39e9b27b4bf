"""Plain-text tables of PrefDisco's results for the terminal."""

from __future__ import annotations

import math

from prefcraft.components.prefdisco.results import EvaluationOutcome
from prefcraft.metrics.stats import Estimate
from prefcraft.optimizers.compile_selection import CompileOutcome, format_verdict

SYNTHETIC_NOTE = ("PrefAlign is on 1-5 (Σ weight x rubric grade / Σ weight; a missing grade counts as 1). NormAlign = "
                  "100 x (discovery - baseline) / (oracle - baseline): the paper's (Table 2) on the conditions' mean "
                  "PrefAlign per task, with the share of tasks below 0 (the paper's 29.0% is this share over "
                  "model-task pairs); beside it the mean of per-scenario NormAlign, undefined where oracle = baseline. "
                  "Intervals: 95% bootstrap over scenarios.")


def format_evaluation(outcome: EvaluationOutcome) -> str:
    lines = [f"PrefDisco on {outcome.scenarios} scenarios (split {outcome.split}). {SYNTHETIC_NOTE}",
             f"{'task':<8} {'condition':<21} {'PrefAlign [95% CI]':<22} {'accuracy [95% CI]':<30} {'questions':>9}  "
             f"{'NormAlign (paper) [95% CI]':<28} {'neg. tasks':>10}  {'per-scenario NormAlign':<28} "
             f"{'neg. scen.':>10} {'undefined':>9} {'failed':>6} {'missing grades':>14}"]
    for item in outcome.summaries:
        normalized = item.norm_align
        paper, negative_tasks, per_scenario, negative, undefined = "-", "-", "-", "-", "-"
        if normalized is not None:
            paper, per_scenario = _norm_align(normalized.of_means), _norm_align(normalized.per_scenario)
            negative = "-" if math.isnan(normalized.per_scenario_negative_share.mean) else \
                f"{100 * normalized.per_scenario_negative_share.mean:.0f}%"
            undefined = f"{normalized.undefined}/{normalized.scenarios}"
        if item.negative_tasks is not None:
            negative_tasks = "{}/{}".format(*item.negative_tasks)
        lines.append(f"{item.task:<8} {item.condition:<21} {_grade(item.pref_align):<22} {item.accuracy!s:<30} "
                     f"{item.questions:9.2f}  {paper:<28} {negative_tasks:>10}  {per_scenario:<28} {negative:>10} "
                     f"{undefined:>9} {item.failures:>6} {item.missing_grades:>14}")
    lines.append("cost per scenario (LM requests, prompt + completion tokens, wall seconds; cache hits are free):")
    for condition, steps in outcome.costs.items():
        parts = []
        for step, cost in steps.items():
            usage = cost.usage
            parts.append(f"{step} {usage.calls / outcome.scenarios:.1f} calls, "
                         f"{(usage.prompt_tokens + usage.completion_tokens) / outcome.scenarios:.0f} tokens, "
                         f"{cost.seconds / outcome.scenarios:.1f} s, {cost.failures} failed, "
                         f"{cost.degenerate} degenerate")
        lines.append(f"  {condition:<21} " + "; ".join(parts))
    lines.append(f"dialogues (every turn, hidden profile, grades, scores): {outcome.results_path}")
    return "\n".join(lines)


def format_compile(outcome: CompileOutcome) -> str:
    return "\n".join([
        f"{outcome.optimizer} over the question asker on {outcome.train} train and {outcome.val} validation scenarios",
        format_verdict(outcome.verdict, "score (PrefAlign / 5 of the final answer, 0 when incorrect)"),
        f"  LM calls {outcome.usage.calls}, prompt tokens {outcome.usage.prompt_tokens}, completion tokens "
        f"{outcome.usage.completion_tokens}",
    ])


def _grade(estimate: Estimate) -> str:
    if math.isnan(estimate.mean):
        return "-"
    interval = "" if math.isnan(estimate.low) else f" [{estimate.low:.2f}, {estimate.high:.2f}]"
    return f"{estimate.mean:.2f}{interval}"


def _norm_align(estimate: Estimate) -> str:
    if math.isnan(estimate.mean):
        return "- (undefined)"
    interval = "" if math.isnan(estimate.low) else f" [{100 * estimate.low:.0f}, {100 * estimate.high:.0f}]"
    return f"{100 * estimate.mean:.0f}{interval} (n={estimate.n})"
