"""`prefcraft sensejudge evaluate`: a selected judge on the annotator's test pairs. One MLflow run, which the runner
opens ("sensejudge-evaluate", `evaluation_params`).

It judges each topic's test pairs in both orders under every candidate description of the topic, so that each single
description, the headline (the reference's score: the mean over the dev-tied-best subsets, or the inverted tied-worst
ones, `reference_score`) and the saved judge's single pick come from one set of calls; then runs the loaded
`SelectedJudge` itself, each pair with its topic's subset (the same prompts: DSPy's cache answers them). Every judge's
accuracy is reported per topic, as their mean (the paper's Overall) and pooled, with consistency and position bias;
the response models are ranked (`ranking`) where the pairs name them (human labels' files do not). The judge's
metadata and the test pairs are read before any model starts (`read_held_out_pairs`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prefcraft.components.component import StepRun
from prefcraft.components.sensejudge.options import EvaluatingOptions
from prefcraft.components.sensejudge.pairs import AnnotatorPairs, pairs_digest, read_annotator_pairs
from prefcraft.components.sensejudge.ranking import rank, rank_by_random_descriptions
from prefcraft.components.sensejudge.results import EvaluationOutcome, JudgeRow
from prefcraft.components.sensejudge.selection import SENSEJUDGE, description_names
from prefcraft.components.sensejudge.topics import ALL_TOPICS, by_topic, metric_name
from prefcraft.components.sensejudge.votes import gold, judgments
from prefcraft.engine.evaluation import judge_pairs
from prefcraft.engine.lm import check_reachable
from prefcraft.engine.session import lm_context
from prefcraft.engine.usage import metered
from prefcraft.errors import ConfigError
from prefcraft.loaders.personal_reward_bench import PreferencePair, judge_set
from prefcraft.metrics.majority_vote import NO_VOTE, decode_vote
from prefcraft.metrics.pairwise import Judgment, pairwise_report
from prefcraft.metrics.position_bias import first_position_share
from prefcraft.optimizers.artifacts import load_compiled, read_metadata
from prefcraft.optimizers.sensejudge import collect_votes, reference_score
from prefcraft.programs.sensejudge import SelectedJudge, description_judge
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, model_params

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HeldOutPairs:
    """What `evaluate` reads: the selected judge's metadata, and the annotator's test pairs grouped as it was
    selected."""

    metadata: dict[str, Any]
    pairs: AnnotatorPairs
    test: dict[str, list[PreferencePair]]
    """Each topic's test pairs; all of them under `ALL_TOPICS` when selected over all pairs."""
    selections: dict[str, dict]
    """Each topic's selection, as the judge's metadata keeps it (`selection._selection_metadata`)."""

    @property
    def scope(self) -> str:
        """How the judge was selected: "topic" or "all" (a file saved before topics: "all")."""
        return self.metadata.get("scope", "all")


def evaluate(options: EvaluatingOptions, run: StepRun) -> EvaluationOutcome:
    return evaluate_judge(run.session, run.tracker, options, run.loaded)


def read_held_out_pairs(options: EvaluatingOptions) -> HeldOutPairs:
    """The selected judge's metadata and the annotator's test pairs, grouped as the judge was selected; raises when
    the judge was selected on other data or lacks a topic of the test pairs."""
    metadata = read_metadata(options.judge_file)
    wanted = options.annotator or metadata.get("annotator")
    source, digest = pairs_digest(options, wanted)
    if metadata.get("data_digest") != digest:
        raise ConfigError(f"{options.judge_file} was selected on data with digest {metadata.get('data_digest')}, "
                          f"not on {source} (digest {digest}): its dev pairs could be among the test pairs",
                          "run `prefcraft sensejudge select` on these pairs (and split) first")
    pairs = read_annotator_pairs(options, wanted, topics=True, models=True)
    annotator = pairs.annotator
    if not annotator.test:
        raise ConfigError(f"annotator {annotator.user_id} has no test pairs in {pairs.source}")
    selections: dict[str, dict] = metadata.get("topics") or {ALL_TOPICS: metadata}  # files saved before topics
    scope = metadata.get("scope", "all")
    test = by_topic(annotator.test, pairs.topic_of) if scope == "topic" else {ALL_TOPICS: annotator.test}
    unselected = sorted(set(test) - set(selections))
    if unselected:
        raise ConfigError(f"{options.judge_file} has no descriptions for the topics {', '.join(unselected)} of the "
                          "test pairs", "run `prefcraft sensejudge select` on this file first")
    if any("reference_subsets" not in selections[topic]["record"] for topic in test):
        raise ConfigError(f"{options.judge_file} was selected before its record kept the subsets the reference's "
                          "headline averages over", "run `prefcraft sensejudge select` again")
    return HeldOutPairs(metadata, pairs, test, selections)


def evaluation_params(options: EvaluatingOptions, run: StepRun) -> dict[str, Any]:
    """The evaluate run's params: the judge's file, the test pairs `read_held_out_pairs` read (`run.loaded`) and the
    models."""
    held_out: HeldOutPairs = run.loaded
    pairs = held_out.pairs
    return {"program": SENSEJUDGE, "judge_file": str(options.judge_file), "data": str(pairs.source),
            "data_digest": pairs.digest, **pairs.params, "annotator": pairs.annotator.user_id,
            "test_pairs": len(pairs.annotator.test), "scope": held_out.scope, "topics": len(held_out.test),
            **model_params(run.session)}


def evaluate_judge(
    session: Settings, tracker: StepTracker, options: EvaluatingOptions, held_out: HeldOutPairs
) -> EvaluationOutcome:
    """Test accuracy, consistency and position bias per description and for the selection, per topic, as the mean
    of topics and pooled; model ranking. Its metrics and files go to the run `tracker` records in (the evaluate run,
    `evaluation_params`)."""
    pairs, test, selections, scope = held_out.pairs, held_out.test, held_out.selections, held_out.scope
    annotator, topic_of = pairs.annotator, pairs.topic_of
    examples = {topic: judge_set(topic_pairs) for topic, topic_pairs in test.items()}
    with lm_context(session, "task"):
        with metered() as every_description:
            votes = {topic: collect_votes([description_judge(d) for d in selections[topic]["candidate_descriptions"]],
                                          examples[topic], num_threads=session.threads) for topic in test}
        if any((topic_votes == NO_VOTE).any() for topic_votes in votes.values()):
            check_reachable(session.task, "task")
        judge = SelectedJudge()
        load_compiled(judge, options.judge_file, program_name=SENSEJUDGE)
        with metered() as selected_judge:
            selected_judgments = [
                judgment for topic, topic_pairs in test.items()
                for judgment in judge_pairs(judge.for_topic(topic), topic_pairs, model=session.task,
                                            num_threads=session.threads)[0]]
        by_description: dict[str, list[Judgment]] = {}
        for topic, topic_votes in votes.items():
            for name, row in zip(selections[topic]["description_names"], topic_votes, strict=True):
                by_description.setdefault(name, []).extend(
                    judgments(examples[topic], [decode_vote(vote) for vote in row]))
        names = description_names(max(len(selection["description_names"]) for selection in selections.values()))
        rows = [_row(name, by_description[name], topic_of, session.seed) for name in names if name in by_description]
        chosen = sum(len(selections[topic]["descriptions"]) for topic in test)
        candidates = sum(len(selections[topic]["candidate_descriptions"]) for topic in test)
        per_topic = ", per topic" if scope == "topic" else ""
        selected = _row(f"selected ({chosen} of {candidates}{per_topic})", selected_judgments, topic_of,
                        session.seed)
        rule = held_out.metadata["optimizer"].get("unparseable_vote", "against")
        records = {topic: selections[topic]["record"] for topic in test}
        headline = {topic: reference_score(votes[topic], gold(examples[topic]), [
            tuple(subset) for subset in record["reference_subsets"]], record["reference_strategy"], rule)
            for topic, record in records.items()}
        models = pairs.models
        if models is None:
            ranking = None
        elif options.ranking_judge == "selected":
            ranking = rank(annotator.test, selected_judgments, models, options.reference_ranking, "selected judge")
        else:
            ranking = rank_by_random_descriptions(annotator.test, examples, votes, selections, models,
                                                  options.ranking_descriptions, options.reference_ranking,
                                                  session.seed, rule)
        outcome = EvaluationOutcome(
            scope=scope, rows=rows, selected=selected, reference_scores=headline,
            reference_strategies={topic: record["reference_strategy"] for topic, record in records.items()},
            reference_subsets=sum(len(record["reference_subsets"]) for record in records.values()), ranking=ranking,
            labels=pairs.labels,
            usage={"every_description": every_description.usage, "selected_judge": selected_judge.usage},
        )  # fmt: skip
        _log_evaluation(tracker, outcome, selected_judgments, options.output_dir)
    return outcome


def _row(name: str, judged: list[Judgment], topic_of: dict[str, str], seed: int) -> JudgeRow:
    by_topic_right: dict[str, list[bool]] = {}
    for judgment in judged:
        by_topic_right.setdefault(topic_of[judgment.pair_id], []).append(judgment.correct)
    return JudgeRow(name, pairwise_report(judged, seed=seed), first_position_share(judged, seed=seed),
                    {topic: sum(right) / len(right) for topic, right in sorted(by_topic_right.items())})


def _log_evaluation(tracker: StepTracker, outcome: EvaluationOutcome, judged: list[Judgment], output_dir: Path) -> None:
    """The evaluation's metrics, its ranking and the like (a JSON artifact), and the selected judge's judgments (a
    result file)."""
    metrics = {}
    for number, row in enumerate([*outcome.rows, outcome.selected]):
        prefix = "selected_" if row is outcome.selected else f"description_{number}_"
        metrics.update(row.report.as_metrics(prefix))
        metrics[f"{prefix}first_position_share"] = row.first_position.mean
        metrics[f"{prefix}overall_accuracy"] = row.overall
        metrics.update({f"{prefix}topic_{metric_name(topic)}_accuracy": accuracy
                        for topic, accuracy in row.topics.items()})
    metrics["sensejudge_score"] = outcome.headline
    ranking = outcome.ranking
    if ranking is not None:
        metrics.update({"kendall_tau_wins": ranking.by_wins.kendall_tau,
                        "spearman_rho_wins": ranking.by_wins.spearman_rho,
                        "kendall_tau_bradley_terry": ranking.by_bradley_terry.kendall_tau,
                        "spearman_rho_bradley_terry": ranking.by_bradley_terry.spearman_rho})
    for step, usage in outcome.usage.items():
        metrics.update(usage.as_metrics(f"{step}_"))
    tracker.log_metrics({name: value for name, value in metrics.items() if value == value})  # NaN: nothing measured
    tracker.log_json({"labels": outcome.labels, "scope": outcome.scope, "reference_scores": outcome.reference_scores,
                      "reference_strategies": outcome.reference_strategies,
                      "ranking": ranking and asdict(ranking)}, "sensejudge-evaluation.json")
    path = tracker.write_results(output_dir / "sensejudge-judgments.jsonl", map(asdict, judged))
    logger.info("wrote %d judgments of the selected judge to %s", len(judged), path)
