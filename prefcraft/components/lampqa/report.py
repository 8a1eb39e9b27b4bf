"""Plain-text tables for `prefcraft lampqa`: scores per method and category, gains, plan coverage, cost per question."""

from __future__ import annotations

import math

from prefcraft.components.lampqa.results import BASELINE, EvaluationOutcome
from prefcraft.metrics.stats import Estimate
from prefcraft.optimizers.compile_selection import CompileOutcome, format_verdict

# The baseline's row keeps the paper's name for it beside prefcraft's.
METHOD_NAMES = {"baseline": "baseline (No personalization)", "rag": "RAG (profile)",
                "rag_random": "RAG (random user's profile)",
                "planpers": "PlanPers (prompted planner)",  # the paper's planner is trained; none can be here
                "planpers_compiled": "PlanPers, compiled"}
SHORT_CATEGORIES = {"Art_and_Entertainment": "Arts", "Lifestyle_and_Personal_Development": "Lifestyle",
                    "Society_and_Culture": "Society"}


def format_evaluation(outcome: EvaluationOutcome) -> str:
    categories = sorted({category for method in outcome.methods.values() for category in method.report.by_category})
    header = ["method", "score (macro) [95% CI]", "pooled [95% CI]", *(SHORT_CATEGORIES.get(c, c) for c in categories),
              f"gain vs {BASELINE}", "failed"]
    rows = []
    for name, method in outcome.methods.items():
        report = method.report
        rows.append([METHOD_NAMES.get(name, name), _estimate(report.overall), _estimate(report.pooled),
                     *(_estimate(report.by_category[c]) if c in report.by_category else "-" for c in categories),
                     _gain(method.gain), f"{report.failed_answers} ans / {report.failed_judgments} jdg"])
    lines = [f"LaMP-QA aspect score on {outcome.questions} {outcome.split} questions (Σ 0-2 judge scores / "
             "2·#aspects; score = mean of the category means, the paper's Average (macro), gains on it; pooled = mean "
             "over all questions; a failed judgment scores 0; intervals resample questions)", _table(header, rows)]
    coverage = [(name, method.coverage) for name, method in outcome.methods.items() if method.coverage is not None]
    if coverage:
        lines.append("Planner coverage (the plan judged against the gold aspects, same score): " + "; ".join(
            f"{METHOD_NAMES.get(name, name)} {_estimate(estimate)}" for name, estimate in coverage))
    lines.append(_cost_table(outcome))
    if outcome.skipped_posts:
        lines.append(f"{outcome.skipped_posts} profile post(s) without text were skipped")
    if outcome.empty_profiles:
        lines.append(f"{outcome.empty_profiles} question(s) with an empty profile were answered without posts")
    if outcome.compiled:
        lines.append(f"compiled PlanPers: {outcome.compiled}")
    return "\n".join(lines)


def format_compile(outcome: CompileOutcome) -> str:
    return (f"{outcome.optimizer} over PlanPers on {outcome.train} train / {outcome.val} validation questions\n"
            f"{format_verdict(outcome.verdict, 'aspect score')}\n"
            f"  LM calls {outcome.usage.calls}, prompt tokens {outcome.usage.prompt_tokens}, "
            f"completion tokens {outcome.usage.completion_tokens}")


def _cost_table(outcome: EvaluationOutcome) -> str:
    questions = max(outcome.questions, 1)
    rows = [[METHOD_NAMES.get(name, name), step, f"{cost.usage.calls / questions:.1f}",
             f"{cost.usage.prompt_tokens / questions:.0f}", f"{cost.usage.completion_tokens / questions:.0f}",
             f"{cost.seconds / questions:.1f}", str(cost.failures), str(cost.degenerate)]
            for name, method in outcome.methods.items() for step, cost in method.cost.items()]
    return "Cost per question (cache hits cost nothing)\n" + _table(
        ["method", "step", "LM calls", "prompt tok", "completion tok", "wall s", "failures", "degenerate"], rows)


def _estimate(estimate: Estimate) -> str:
    if math.isnan(estimate.mean):
        return "-"
    if math.isnan(estimate.low):
        return f"{estimate.mean:.3f}"
    return f"{estimate.mean:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"


def _gain(gain: float) -> str:
    return "-" if math.isnan(gain) else f"{100 * gain:+.0f}%"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])
