"""Plain-text tables of SenseJudge's results for the terminal."""

from __future__ import annotations

from prefcraft.components.sensejudge.results import EvaluationOutcome, JudgeRow, SelectionOutcome, SimulationSummary
from prefcraft.usage import LMUsage

SIMULATED_NOTE = "The labels are SIMULATED: an LLM annotator given a persona chose them, not a person."


def format_simulation(summary: SimulationSummary) -> str:
    return "\n".join([
        f"wrote {summary.dev_pairs} dev and {summary.test_pairs} test pairs to {summary.path}",
        f"  {SIMULATED_NOTE}",
        f"  dialogues used (file positions, dev first) {summary.dialogues}, replaced {summary.replaced_dialogues}",
        f"  failed responses {summary.failed_responses}, failed labels {summary.failed_labels}, pairs dropped as "
        f"identical (both responses the same, or the same two as another pair) {summary.identical_pairs}",
        *_usage_lines(summary.usage),
    ])


def format_selection(outcome: SelectionOutcome) -> str:
    record = outcome.record
    lines = [
        f"selected {len(record.selected)} of {record.descriptions} descriptions ({record.strategy} search, "
        f"{record.subsets_scored} subsets scored, {len(record.tied_best)} tied for best): dev accuracy "
        f"{100 * record.accuracy:.1f}% over {record.examples} judgments; compiled judge written to {outcome.path}",
        f"  judged descriptions {record.judged_descriptions}{' (stopped early)' if record.stopped_early else ''}, "
        f"failed calls {record.failed_calls}",
    ]
    for index, description in enumerate(outcome.descriptions):
        mark = "*" if index in record.selected else " "
        judged = index < record.judged_descriptions
        score = f"{100 * record.description_accuracy[index]:5.1f}%" if judged else "not judged"
        text = " ".join(description.split()) or "(no description)"
        lines.append(f"  {mark} {index:>2} dev {score}  {text[:100]}")
    return "\n".join([*lines, *_usage_lines(outcome.usage)])


def format_evaluation(outcome: EvaluationOutcome) -> str:
    test_pairs = outcome.selected.report.accuracy.n // 2
    lines = [f"SenseJudge on {test_pairs} test pairs, each judged in both orders. Labels: {outcome.labels}."]
    if "simulated" in outcome.labels:
        lines.append(f"  {SIMULATED_NOTE}")
    lines.append(f"{'judge':<24} {'accuracy, both orders [95% CI]':<33} {'consistency':>11}  "
                 f"{'first position [95% CI]':<33} unparseable")
    lines += [_row_line(row) for row in [*outcome.rows, outcome.selected]]
    lines.append(f"{f'tied-best average ({outcome.tied_best_subsets})':<24} "
                 f"{100 * outcome.tied_best_accuracy:5.1f}%  (the reference's score: the mean over dev-tied subsets)")
    ranking = outcome.ranking
    lines.append(f"model ranking (reference: {ranking.reference_source})")
    lines.append(f"  {'model':<12} {'judge wins':>10} {'Bradley-Terry':>14} {'reference rank':>15}")
    for model in sorted(ranking.judge_wins, key=lambda name: -ranking.judge_wins[name]):
        reference = ranking.reference.get(model)
        rank = "-" if reference is None else str(1 + sum(score > reference for score in ranking.reference.values()))
        lines.append(f"  {model:<12} {100 * ranking.judge_wins[model]:9.1f}% "
                     f"{ranking.judge_bradley_terry[model]:14.3f} {rank:>15}")
    for name, correlation in (("wins", ranking.by_wins), ("Bradley-Terry", ranking.by_bradley_terry)):
        lines.append(f"  by {name}: Kendall tau {correlation.kendall_tau:.3f}, Spearman rho "
                     f"{correlation.spearman_rho:.3f} over {correlation.models} models")
    return "\n".join([*lines, *_usage_lines(outcome.usage)])


def _row_line(row: JudgeRow) -> str:
    report = row.report
    return (f"{row.name:<24} {report.accuracy!s:<33} {100 * report.consistency:10.1f}%  {row.first_position!s:<33} "
            f"{report.parse_failures}")


def _usage_lines(usage: dict[str, LMUsage]) -> list[str]:
    return [f"  LM calls ({step}) {step_usage.calls}, prompt tokens {step_usage.prompt_tokens}, completion tokens "
            f"{step_usage.completion_tokens}" for step, step_usage in usage.items()]
