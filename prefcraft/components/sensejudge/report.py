"""Plain-text tables of SenseJudge's results for the terminal."""

from __future__ import annotations

from prefcraft.components.sensejudge.results import (
    DemoOutcome,
    EvaluationOutcome,
    JudgeRow,
    RankingOutcome,
    SelectionOutcome,
    SimulationSummary,
    mean_of,
)
from prefcraft.engine.usage import LMUsage

NAME_WIDTH = 30
SIMULATED_NOTE = "The labels are SIMULATED: an LLM annotator given a persona chose them, not a person."
NO_MODELS = "the labelled pairs do not name the models that wrote the responses"


def format_simulation(summary: SimulationSummary) -> str:
    return "\n".join([
        f"wrote {summary.dev_pairs} dev and {summary.test_pairs} test pairs to {summary.path}",
        f"  {SIMULATED_NOTE}",
        f"  dev and test pairs per topic: "
        f"{', '.join(f'{topic} {dev} + {test}' for topic, (dev, test) in summary.topics.items())}",
        f"  dialogues used (file positions, each topic's dev first) {summary.dialogues}, replaced "
        f"{summary.replaced_dialogues}",
        f"  failed responses {summary.failed_responses}, failed labels {summary.failed_labels}, pairs dropped as "
        f"identical (both responses the same, or the same two as another pair) {summary.identical_pairs}",
        *_usage_lines(summary.usage),
    ])


def format_selection(outcome: SelectionOutcome) -> str:
    records = outcome.records
    scope = "per topic, each on its own dev pairs" if outcome.scope == "topic" else "once over all dev pairs"
    lines = [f"selected descriptions {scope}: dev accuracy {100 * outcome.dev_accuracy:.1f}%"
             f"{' (mean of the topics)' if len(records) > 1 else ''}; compiled judge written to {outcome.path}"]
    for topic, selection in outcome.topics.items():
        record = records[topic]
        lines += [
            f"{topic}: selected {len(record.selected)} of {record.descriptions} descriptions ({record.strategy} "
            f"search, {record.subsets_scored} subsets scored, {len(record.tied_best)} tied for best): dev accuracy "
            f"{100 * record.accuracy:.1f}% over {record.examples} judgments",
            f"  the reference's score will average {len(record.reference_subsets)} subsets "
            f"({record.reference_strategy.replace('_', ' ')})",
            f"  judged descriptions {record.judged_descriptions}{' (stopped early)' if record.stopped_early else ''}, "
            f"failed calls {record.failed_calls}, failed descriptions {len(selection.failed_descriptions)}",
            *(f"  description {position} failed and is empty: {' '.join(error.split())[:200]}"
              for position, error in selection.failed_descriptions.items()),
        ]
        for index, description in enumerate(selection.descriptions):
            mark = "*" if index in record.selected else " "
            judged = index < record.judged_descriptions
            score = f"{100 * record.description_accuracy[index]:5.1f}%" if judged else "not judged"
            text = " ".join(description.split()) or "(no description)"
            lines.append(f"  {mark} {index:>2} dev {score}  {text[:100]}")
    return "\n".join([*lines, *_usage_lines(outcome.usage)])


def format_evaluation(outcome: EvaluationOutcome) -> str:
    test_pairs = outcome.selected.report.accuracy.n // 2
    topics = list(outcome.selected.topics)
    per_topic = outcome.scope == "topic"
    lines = [f"SenseJudge on {test_pairs} test pairs in {len(topics)} topics, each judged in both orders, with "
             f"descriptions selected {'per topic' if per_topic else 'once over all dev pairs'}. Labels: "
             f"{outcome.labels}."]
    if "simulated" in outcome.labels:
        lines.append(f"  {SIMULATED_NOTE}")
    lines.append(f"{'judge':<{NAME_WIDTH}} {'Overall':>7}  {'pooled accuracy, both orders [95% CI]':<37} "
                 f"{'consistency':>11}  {'first position [95% CI]':<33} unparseable")
    lines += [_row_line(row) for row in [*outcome.rows, outcome.selected]]
    inverted = [topic for topic, rule in outcome.reference_strategies.items() if rule == "inverted_worst"]
    averaged = ("the mean over dev-tied-best subsets" + (", per topic, then over topics" if per_topic else "")
                + (f"; inverted tied-worst in {', '.join(inverted)}" if inverted else ""))
    lines.append(f"{f'SenseJudge score ({outcome.reference_subsets})':<{NAME_WIDTH}} "
                 f"{100 * outcome.headline:6.1f}%  (headline, the reference's score: {averaged}; the selected row is "
                 "the saved judge's single pick)")
    lines.append("Overall is the mean of the topics' accuracies (the paper's Table 1); the interval is over every "
                 "judgment, pooled. Accuracy per topic:")
    lines.append(f"  {'judge':<{NAME_WIDTH}} " + " ".join(f"{topic[:11]:>11}" for topic in topics) + f" {'Overall':>8}")
    table = [(row.name, row.topics) for row in (outcome.rows[0], outcome.selected)]
    if per_topic:
        table.append(("SenseJudge score", outcome.reference_scores))
    for name, accuracies in table:
        cells = " ".join(f"{_percent(accuracies.get(topic)):>11}" for topic in topics)
        lines.append(f"  {name:<{NAME_WIDTH}} {cells} {_percent(mean_of(accuracies.values())):>8}")
    lines += _ranking_lines(outcome.ranking)
    return "\n".join([*lines, *_usage_lines(outcome.usage)])


def _ranking_lines(ranking: RankingOutcome | None) -> list[str]:
    if ranking is None:
        return [f"model ranking: none ({NO_MODELS})"]
    lines = [f"model ranking (judge: {ranking.judge}, reference: {ranking.reference_source})"]
    lines += [f"  {topic} descriptions drawn: {', '.join(names)}" for topic, names in ranking.drawn.items()]
    lines.append(f"  {'model':<12} {'judge wins':>10} {'Bradley-Terry':>14} {'reference rank':>15}")
    for model in sorted(ranking.judge_wins, key=lambda name: -ranking.judge_wins[name]):
        reference = ranking.reference.get(model)
        rank = "-" if reference is None else str(1 + sum(score > reference for score in ranking.reference.values()))
        lines.append(f"  {model:<12} {100 * ranking.judge_wins[model]:9.1f}% "
                     f"{ranking.judge_bradley_terry[model]:14.3f} {rank:>15}")
    for name, correlation in (("wins", ranking.by_wins), ("Bradley-Terry", ranking.by_bradley_terry)):
        lines.append(f"  by {name}: Kendall tau {correlation.kendall_tau:.3f}, Spearman rho "
                     f"{correlation.spearman_rho:.3f} over {correlation.models} models")
    return lines


def format_demo(outcome: DemoOutcome) -> str:
    """The simulation's, the selection's and the evaluation's reports, in the order they ran."""
    return "\n".join([format_simulation(outcome.simulation), format_selection(outcome.selection),
                      format_evaluation(outcome.evaluation)])


def _row_line(row: JudgeRow) -> str:
    report = row.report
    return (f"{row.name:<{NAME_WIDTH}} {100 * row.overall:6.1f}%  {report.accuracy!s:<37} "
            f"{100 * report.consistency:10.1f}%  {row.first_position!s:<33} {report.parse_failures}")


def _percent(value: float | None) -> str:
    return "-" if value is None or value != value else f"{100 * value:.1f}%"


def _usage_lines(usage: dict[str, LMUsage]) -> list[str]:
    return [f"  LM calls ({step}) {step_usage.calls}, prompt tokens {step_usage.prompt_tokens}, completion tokens "
            f"{step_usage.completion_tokens}" for step, step_usage in usage.items()]
