"""SynthesizeMe's terminal reports: a method's pairwise report, the methods side by side, the fit's summary, and each
step's report made of them."""

from __future__ import annotations

from pathlib import Path

from prefcraft.components.synthesizeme.demo import DemoOutcome
from prefcraft.components.synthesizeme.evaluation import MethodOutcome
from prefcraft.components.synthesizeme.fit import FitSummary
from prefcraft.engine.usage import LMUsage
from prefcraft.metrics.pairwise import PairwiseReport
from prefcraft.optimizers.compile_selection import CompileVerdict, format_verdict


def format_report(name: str, report: PairwiseReport, usage: LMUsage) -> str:
    lines = [
        f"{name}: accuracy over both orders {report.accuracy} (interval over pairs)",
        f"  interval over judgments {report.accuracy_per_judgment_ci} (the reference code's: basic bootstrap, 9,999 "
        "resamples)",
        f"  chosen shown first   {report.chosen_first}",
        f"  chosen shown second  {report.chosen_second}",
        f"  both orders right    {report.pair_accuracy}",
        f"  consistency {100 * report.consistency:.1f}% (pairs left out, unparseable: {report.consistency_left_out}),"
        f" failed judgments (no answer or unparseable) {report.parse_failures}",
        f"  accuracy with unparseable judgments scored 1/2, not 0 (the reference's first evaluate): "
        f"{100 * report.accuracy_unparseable_half:.1f}%",
        f"  LM calls {usage.calls}, prompt tokens {usage.prompt_tokens}, completion tokens {usage.completion_tokens}",
        "  per user:",
    ]
    lines += [f"    {user_id:<20} {estimate}" for user_id, estimate in report.per_user.items()]
    return "\n".join(lines)


def format_users(outcome: MethodOutcome) -> str:
    """How many users a method judged, and those whose judge could not be built (their judgments count as wrong)."""
    lines = [f"  users judged {outcome.users}, judges that could not be built {len(outcome.failures)} (each of their "
             "judgments counted wrong)"]
    lines += [f"    failed {user_id}: {reason}" for user_id, reason in outcome.failures.items()]
    return "\n".join(lines)


def format_fit_summary(summary: FitSummary) -> str:
    users = len(summary.judges) + summary.not_fitted
    lines = [f"fitted {len(summary.fitted)} user(s), resumed {len(summary.resumed)}, skipped {len(summary.skipped)}"
             f" (their data), failed {len(summary.failed)} (a model call), of {users} user(s)"]
    lines += [f"  skipped {user_id}: {reason}" for user_id, reason in summary.skipped.items()]
    lines += [f"  failed {user_id}: {reason}" for user_id, reason in summary.failed.items()]
    return "\n".join(lines)


def format_comparison(reports: dict[str, PairwiseReport]) -> str:
    """One row per method (Table 3's columns; the row `baseline` is the paper's Default, no user context), then
    per-user accuracy with one column per method."""
    lines = [f"{'method':<14} {'accuracy, both orders [95% CI]':<33} {'chosen first':>12} {'chosen second':>14} "
             f"{'consistency':>12}"]
    for method, report in reports.items():
        lines.append(f"{method:<14} {report.accuracy!s:<33} {100 * report.chosen_first.mean:11.1f}% "
                     f"{100 * report.chosen_second.mean:13.1f}% {100 * report.consistency:11.1f}%")
    users = sorted({user for report in reports.values() for user in report.per_user})
    lines.append("per user        " + "".join(f"{method:>14}" for method in reports))
    for user in users:
        cells = [report.per_user.get(user) for report in reports.values()]
        lines.append(f"  {user:<14}" + "".join(f"{100 * c.mean:13.1f}%" if c else f"{'-':>14}" for c in cells))
    return "\n".join(lines)


def format_evaluation(outcomes: dict[str, MethodOutcome]) -> str:
    """Each method's report, then the methods side by side when there are several."""
    parts = [f"{format_report(method, outcome.report, outcome.usage)}\n{format_users(outcome)}"
             for method, outcome in outcomes.items()]
    if len(outcomes) > 1:
        parts.append(format_comparison({method: outcome.report for method, outcome in outcomes.items()}))
    return "\n".join(parts)


def format_demo(outcome: DemoOutcome) -> str:
    return f"{format_fit_summary(outcome.fit)}\n{format_evaluation(outcome.methods)}"


def format_compile_persona(verdict: CompileVerdict) -> str:
    return "compile-persona:\n" + format_verdict(verdict, "persona metric (--persona-metric)")


def format_imported(path: Path) -> str:
    return f"released persona prompt imported to {path}; fit from it with --persona-prompt {path}"
