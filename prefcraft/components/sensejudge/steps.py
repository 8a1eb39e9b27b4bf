"""The work of `prefcraft sensejudge`'s steps: SenseJudge on one annotator's labelled pairs, and model ranking. Each
step is one MLflow run; the demo runs the three, each its own run, in one model session.

simulate: labelled pairs on real SenseBench requests (`simulation`), their labels SIMULATED.
select and evaluate read one annotator's labelled pairs (`pairs`): SenseBench's human labels, split into dev and test
pairs as the reference splits them, or a file of pairs such as simulate writes.
select: as the paper does (§4.1.2), per topic by default (`scope`): the preference extractor writes each topic's
candidate descriptions from that topic's dev pairs (the annotator's train and val pairs) on the prompt model (the
task model unless the settings name one: the reference's judge writes its own), a failed description left empty and
counted, and `SubsetSelection` judges
every one of them under every description in both orders and keeps the best subset; with scope "all", once over every
dev pair. The `SelectedJudge`, holding each topic's subset, is saved as compiled JSON, with each topic's candidates,
votes and tied-best subsets in its metadata.
evaluate: judges each topic's test pairs in both orders under every candidate description of the topic, so that each
single description, the headline (the reference's score: the mean over the dev-tied-best subsets, or the inverted
tied-worst ones, `reference_score`) and the saved judge's single pick come from one set of calls; then runs the loaded
`SelectedJudge` itself, each pair with its topic's subset (the same prompts: DSPy's cache answers them). Every judge's
accuracy is reported per topic, as their mean (the paper's Overall) and pooled. The
models are ranked by wins and by a Bradley-Terry fit, against the annotator's own ranking (by the labels' wins) or a
given one (not on human labels, whose files do not name the response models). The ranking judge is by default the
paper's (§4.1.3, §4.2.2): in each topic, `ranking_descriptions` (5) of its written descriptions drawn at random with
the session's seed, their majority vote on each test judgment taken from the votes already collected (no more calls;
a tie or a failed vote counts by the selection's rules, since the paper assumes no ties); or, as an option, the
selected judge.

Each step reads its data before any model starts (its `read_*` function): the dialogues, the dev pairs, or the
selected judge's metadata with the test pairs; the demo reads the pairs once the simulation has written them.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dspy
import numpy as np

from prefcraft.components.component import StepRun
from prefcraft.components.sensejudge.data import Dialogue
from prefcraft.components.sensejudge.options import (
    DemoOptions,
    EvaluatingOptions,
    SelectingOptions,
    SimulateOptions,
)
from prefcraft.components.sensejudge.pairs import AnnotatorPairs, pairs_digest, read_annotator_pairs
from prefcraft.components.sensejudge.results import (
    DemoOutcome,
    EvaluationOutcome,
    JudgeRow,
    RankingOutcome,
    SelectionOutcome,
    SimulationSummary,
)
from prefcraft.components.sensejudge.simulation import read_dialogues, sample_dialogues, simulate_pairs
from prefcraft.errors import ConfigError
from prefcraft.evaluation import judge_pairs
from prefcraft.lm import check_reachable
from prefcraft.loaders.personal_reward_bench import PreferencePair, judge_set, pair_id
from prefcraft.metrics.majority_vote import NO_VOTE, UnparseableVote, decode_vote, encode_votes, majority_decisions
from prefcraft.metrics.pairwise import Judgment, pairwise_report
from prefcraft.metrics.position_bias import first_position_share
from prefcraft.metrics.ranking import (
    Comparison,
    bradley_terry,
    rank_correlation,
    ranking_scores,
    win_rates,
)
from prefcraft.optimizers.artifacts import load_compiled, read_metadata, save_compiled
from prefcraft.optimizers.sensejudge import (
    SubsetSelectionConfig,
    SubsetSelectionRecord,
    TopicSelection,
    collect_votes,
    reference_score,
    select_per_topic,
)
from prefcraft.programs.sensejudge import SelectedJudge, description_judge
from prefcraft.runtime import lm_context
from prefcraft.settings import Settings
from prefcraft.tracking import Tracker, log_json, model_params, write_results
from prefcraft.usage import LMUsage, metered

logger = logging.getLogger(__name__)

SENSEJUDGE = "sensejudge"
PROGRAMS = {SENSEJUDGE: lambda metadata: SelectedJudge()}
"""The program a compiled file names, built fresh (`prefcraft.load`)."""
ALL_TOPICS = "all"
"""The name of the one selection made over every dev pair (scope "all")."""


@dataclass(frozen=True)
class DevPairs:
    """What `select` reads: the annotator's dev pairs (splits train and val), grouped as the selection's scope says."""

    pairs: AnnotatorPairs
    groups: dict[str, list[PreferencePair]]
    """Each topic's dev pairs; all of them under `ALL_TOPICS` when selected over all pairs."""


@dataclass(frozen=True)
class HeldOutPairs:
    """What `evaluate` reads: the selected judge's metadata, and the annotator's test pairs grouped as it was
    selected."""

    metadata: dict[str, Any]
    pairs: AnnotatorPairs
    test: dict[str, list[PreferencePair]]
    """Each topic's test pairs; all of them under `ALL_TOPICS` when selected over all pairs."""
    selections: dict[str, dict]
    """Each topic's selection, as the judge's metadata keeps it (`_selection_metadata`)."""

    @property
    def scope(self) -> str:
        """How the judge was selected: "topic" or "all" (a file saved before topics: "all")."""
        return self.metadata.get("scope", "all")


def read_simulated(options: SimulateOptions | DemoOptions) -> list[Dialogue]:
    """The SenseBench dialogues the simulation draws from, checked against its options."""
    return read_dialogues(options.sensebench, options)


def simulate(options: SimulateOptions, run: StepRun) -> SimulationSummary:
    pools = sample_dialogues(run.loaded, options, run.session.seed)
    return simulate_pairs(run.session, run.tracker, pools, options.sensebench, options.output, options)


def select(options: SelectingOptions, run: StepRun) -> SelectionOutcome:
    return select_descriptions(run.session, run.tracker, options, run.loaded)


def evaluate(options: EvaluatingOptions, run: StepRun) -> EvaluationOutcome:
    return evaluate_judge(run.session, run.tracker, options, run.loaded)


def demo(options: DemoOptions, run: StepRun) -> DemoOutcome:
    """Simulate, select and evaluate, each its own run, on the pairs the simulation writes to `options.pairs`."""
    pools = sample_dialogues(run.loaded, options, run.session.seed)
    simulation = simulate_pairs(run.session, run.tracker, pools, options.sensebench, options.pairs, options)
    selection = select_descriptions(run.session, run.tracker, options, read_dev_pairs(options))
    evaluation = evaluate_judge(run.session, run.tracker, options, read_held_out_pairs(options))
    return DemoOutcome(simulation, selection, evaluation)


def read_dev_pairs(options: SelectingOptions) -> DevPairs:
    """The annotator's dev pairs (`read_annotator_pairs`), per topic or all together (as `options.scope` says)."""
    pairs = read_annotator_pairs(options, options.annotator, topics=options.scope == "topic", models=False)
    dev = pairs.annotator.context_pairs
    if not dev:
        raise ConfigError(f"annotator {pairs.annotator.user_id} has no dev pairs (split train or val) in "
                          f"{pairs.source}")
    groups = _by_topic(dev, pairs.topic_of) if options.scope == "topic" else {ALL_TOPICS: dev}
    return DevPairs(pairs, groups)


def select_descriptions(
    session: Settings, tracker: Tracker, options: SelectingOptions, dev: DevPairs
) -> SelectionOutcome:
    """Extract candidate descriptions from the dev pairs and select a subset, per topic or once over all of them (as
    `options.scope` says); save the SelectedJudge to `options.judge`."""
    pairs, groups = dev.pairs, dev.groups
    annotator = pairs.annotator
    config = options.selection(session.num_threads)
    params = {"program": SENSEJUDGE, "data": str(pairs.source), "data_digest": pairs.digest, **pairs.params,
              "annotator": annotator.user_id, "dev_pairs": len(annotator.context_pairs), "scope": options.scope,
              "topics": len(groups), "max_pair_descriptions": options.max_pair_descriptions,
              "description_length": options.description_length, **_settings_of(config), **model_params(session)}
    with tracker.run("sensejudge-select", params), lm_context(session, "task"):
        selections = select_per_topic(
            groups, config=config, max_pair_descriptions=options.max_pair_descriptions,
            description_length=options.description_length,
            written_from={topic: pairs.as_written(topic_pairs) for topic, topic_pairs in groups.items()},
            writing=lambda: lm_context(session, "prompt"))
        outcome = SelectionOutcome(options.judge, options.scope, selections, usage={
            step: sum((selection.usage[step] for selection in selections.values()), LMUsage())
            for step in ("extraction", "selection")})
        records = outcome.records
        failed_calls = sum(record.failed_calls for record in records.values())
        failed_descriptions = outcome.failed_descriptions
        if failed_descriptions:
            check_reachable(session.model_for("prompt"), "prompt")
            logger.warning("%d description calls failed and left their descriptions empty (see the report)",
                           failed_descriptions)
        if failed_calls:
            check_reachable(session.task, "task")
            logger.warning("%d dev judgments failed and cast no vote", failed_calls)
        judges = {topic: selection.judge for topic, selection in selections.items()}
        judge = judges[ALL_TOPICS] if options.scope == "all" else SelectedJudge.of_topics(judges)
        save_compiled(judge, options.judge, program_name=SENSEJUDGE, model=session.task.model,
                      data=str(pairs.source), data_digest=pairs.digest, annotator=annotator.user_id,
                      read_as=pairs.params, description_length=options.description_length,
                      scope=options.scope,
                      topics={topic: _selection_metadata(selection) for topic, selection in selections.items()},
                      score={"dev_accuracy": outcome.dev_accuracy}, optimizer=_settings_of(config))
        tracker.log_metrics({
            "dev_accuracy": outcome.dev_accuracy, "topics": len(groups),
            **{f"topic_{_metric_name(topic)}_dev_accuracy": record.accuracy
               for topic, record in records.items() if options.scope == "topic"},
            "descriptions": sum(record.descriptions for record in records.values()),
            "judged_descriptions": sum(record.judged_descriptions for record in records.values()),
            "selected": sum(len(record.selected) for record in records.values()),
            "tied_best_subsets": sum(len(record.tied_best) for record in records.values()),
            "failed_calls": failed_calls, "failed_descriptions": failed_descriptions,
            **{f"{step}_{name}": value for step, step_usage in outcome.usage.items()
               for name, value in step_usage.as_metrics().items()}})
        tracker.log_file(options.judge)
    return outcome


def read_held_out_pairs(options: EvaluatingOptions) -> HeldOutPairs:
    """The selected judge's metadata and the annotator's test pairs, grouped as the judge was selected; raises when
    the judge was selected on other data or lacks a topic of the test pairs."""
    metadata = read_metadata(options.judge)
    wanted = options.annotator or metadata.get("annotator")
    source, digest = pairs_digest(options, wanted)
    if metadata.get("data_digest") != digest:
        raise ConfigError(f"{options.judge} was selected on data with digest {metadata.get('data_digest')}, not on "
                          f"{source} (digest {digest}): its dev pairs could be among the test pairs",
                          "run `prefcraft sensejudge select` on these pairs (and split) first")
    pairs = read_annotator_pairs(options, wanted, topics=True, models=True)
    annotator = pairs.annotator
    if not annotator.test:
        raise ConfigError(f"annotator {annotator.user_id} has no test pairs in {pairs.source}")
    selections: dict[str, dict] = metadata.get("topics") or {ALL_TOPICS: metadata}  # files saved before topics
    scope = metadata.get("scope", "all")
    test = _by_topic(annotator.test, pairs.topic_of) if scope == "topic" else {ALL_TOPICS: annotator.test}
    unselected = sorted(set(test) - set(selections))
    if unselected:
        raise ConfigError(f"{options.judge} has no descriptions for the topics {', '.join(unselected)} of the test "
                          "pairs", "run `prefcraft sensejudge select` on this file first")
    return HeldOutPairs(metadata, pairs, test, selections)


def evaluate_judge(
    session: Settings, tracker: Tracker, options: EvaluatingOptions, held_out: HeldOutPairs
) -> EvaluationOutcome:
    """Test accuracy, consistency and position bias per description and for the selection, per topic, as the mean
    of topics and pooled; model ranking."""
    pairs, test, selections, scope = held_out.pairs, held_out.test, held_out.selections, held_out.scope
    annotator, topic_of = pairs.annotator, pairs.topic_of
    examples = {topic: judge_set(topic_pairs) for topic, topic_pairs in test.items()}
    params = {"program": SENSEJUDGE, "judge": str(options.judge), "data": str(pairs.source),
              "data_digest": pairs.digest, **pairs.params, "annotator": annotator.user_id,
              "test_pairs": len(annotator.test), "scope": scope, "topics": len(test), **model_params(session)}
    with tracker.run("sensejudge-evaluate", params), lm_context(session, "task"):
        with metered() as every_description:
            votes = {topic: collect_votes([description_judge(d) for d in selections[topic]["candidate_descriptions"]],
                                          examples[topic], num_threads=session.num_threads) for topic in test}
        if any((topic_votes == NO_VOTE).any() for topic_votes in votes.values()):
            check_reachable(session.task, "task")
        judge = SelectedJudge()
        load_compiled(judge, options.judge, program_name=SENSEJUDGE)
        with metered() as selected_judge:
            judgments = [judgment for topic, topic_pairs in test.items()
                         for judgment in judge_pairs(judge.for_topic(topic), topic_pairs, model=session.task,
                                                     num_threads=session.num_threads)[0]]
        by_description: dict[str, list[Judgment]] = {}
        for topic, topic_votes in votes.items():
            for name, row in zip(selections[topic]["description_names"], topic_votes, strict=True):
                by_description.setdefault(name, []).extend(
                    _judgments(examples[topic], [decode_vote(vote) for vote in row]))
        names = description_names(max(len(selection["description_names"]) for selection in selections.values()))
        rows = [_row(name, by_description[name], topic_of, session.seed) for name in names if name in by_description]
        chosen = sum(len(selections[topic]["descriptions"]) for topic in test)
        candidates = sum(len(selections[topic]["candidate_descriptions"]) for topic in test)
        per_topic = ", per topic" if scope == "topic" else ""
        selected = _row(f"selected ({chosen} of {candidates}{per_topic})", judgments, topic_of, session.seed)
        rule = held_out.metadata["optimizer"].get("unparseable_vote", "against")
        records = {topic: selections[topic]["record"] for topic in test}
        headline = {topic: reference_score(votes[topic], _gold(examples[topic]), [
            tuple(subset) for subset in record["reference_subsets"]], record["reference_strategy"], rule)
            for topic, record in records.items()}
        models = pairs.models
        if models is None:
            ranking = None
        elif options.ranking_judge == "selected":
            ranking = _rank(annotator.test, judgments, models, options.reference_ranking, "selected judge")
        else:
            ranking = _rank_by_random_descriptions(annotator.test, examples, votes, selections, models,
                                                   options.ranking_descriptions, options.reference_ranking,
                                                   session.seed, rule)
        outcome = EvaluationOutcome(
            scope=scope, rows=rows, selected=selected, reference_scores=headline,
            reference_strategies={topic: record["reference_strategy"] for topic, record in records.items()},
            reference_subsets=sum(len(record["reference_subsets"]) for record in records.values()), ranking=ranking,
            labels=pairs.labels,
            usage={"every_description": every_description.usage, "selected_judge": selected_judge.usage},
        )  # fmt: skip
        _log_evaluation(tracker, outcome, judgments, options.output_dir)
    return outcome


def description_names(count: int) -> list[str]:
    """Names of the extractor's descriptions, in its order: none, one per dev pair, the aggregate."""
    return ["no description", *[f"dev pair {number}" for number in range(1, count - 1)], "aggregate"]


def _by_topic(pairs: Sequence[PreferencePair], topic_of: dict[str, str]) -> dict[str, list[PreferencePair]]:
    """`pairs` grouped by topic, topics in sorted order, pairs in file order."""
    groups: dict[str, list[PreferencePair]] = {}
    for pair in pairs:
        groups.setdefault(topic_of[pair_id(pair)], []).append(pair)
    return dict(sorted(groups.items()))


def _selection_metadata(selection: TopicSelection) -> dict[str, object]:
    """One topic's selection as the compiled file's metadata keeps it: what `evaluate` reads, and the record."""
    record: SubsetSelectionRecord = selection.judge.selection
    names = description_names(len(selection.descriptions))
    return {"descriptions": [selection.descriptions[index] for index in record.selected],
            "candidate_descriptions": selection.descriptions, "description_names": names,
            "failed_descriptions": {names[position]: error
                                    for position, error in selection.failed_descriptions.items()},
            "record": asdict(record)}


def _metric_name(topic: str) -> str:
    """A topic as a part of an MLflow metric name."""
    return re.sub(r"[^0-9A-Za-z_.-]", "_", topic)


def _settings_of(config: SubsetSelectionConfig) -> dict[str, object]:
    """The settings that change a selection's result (threads and progress bars only change how it runs)."""
    return {name: value for name, value in asdict(config).items() if name not in ("num_threads", "display_progress")}


def _gold(examples: Sequence[dspy.Example]) -> np.ndarray:
    return encode_votes([[example.preference for example in examples]])[0]


def _judgments(examples: Sequence[dspy.Example], predictions: Sequence[str | None]) -> list[Judgment]:
    return [Judgment(user_id=example.user_id, pair_id=example.pair_id, order=example.order, predicted=predicted,
                     correct=predicted == example.preference)
            for example, predicted in zip(examples, predictions, strict=True)]


def _row(name: str, judgments: list[Judgment], topic_of: dict[str, str], seed: int) -> JudgeRow:
    by_topic: dict[str, list[bool]] = {}
    for judgment in judgments:
        by_topic.setdefault(topic_of[judgment.pair_id], []).append(judgment.correct)
    return JudgeRow(name, pairwise_report(judgments, seed=seed), first_position_share(judgments, seed=seed),
                    {topic: sum(right) / len(right) for topic, right in sorted(by_topic.items())})


def draw_descriptions(descriptions: Sequence[str], count: int, seed: int, topic: str) -> list[int]:
    """The positions of `count` of a topic's written descriptions (the empty one is no preference), drawn at random,
    the same for a seed and topic whatever the other topics; all of them when there are no more than `count`."""
    written = [index for index, description in enumerate(descriptions) if description.strip()]
    if len(written) <= count:
        return written
    return sorted(random.Random(f"{seed}/{topic}").sample(written, count))


def _rank_by_random_descriptions(
    test: Sequence[PreferencePair], examples: dict[str, list[dspy.Example]], votes: dict[str, np.ndarray],
    selections: dict[str, dict], models: dict[str, tuple[str, str]], count: int, given: Sequence[str] | None,
    seed: int, rule: UnparseableVote,
) -> RankingOutcome:
    """The paper's ranking judge: per topic, the majority vote of `count` descriptions drawn at random, on the votes
    every description already cast; the models ranked against the `given` ranking, if any."""
    judgments, drawn = [], {}
    for topic, topic_votes in votes.items():
        positions = draw_descriptions(selections[topic]["candidate_descriptions"], count, seed, topic)
        subset = np.zeros((1, len(topic_votes)), dtype=np.int8)
        subset[0, positions] = 1
        decisions = majority_decisions(topic_votes, subset, rule)[0]
        judgments += _judgments(examples[topic], [decode_vote(decision) for decision in decisions])
        drawn[topic] = [selections[topic]["description_names"][position] for position in positions]
    fewer = [f"{topic} {len(names)}" for topic, names in drawn.items() if len(names) < count]
    judge = f"{count} random descriptions per topic, majority vote"
    if fewer:
        judge += f"; all of them where a topic has fewer ({', '.join(fewer)})"
    return _rank(test, judgments, models, given, judge, drawn)


def _rank(
    test: Sequence[PreferencePair], judgments: Sequence[Judgment], models: dict[str, tuple[str, str]],
    given: Sequence[str] | None, judge: str, drawn: dict[str, list[str]] | None = None,
) -> RankingOutcome:
    """The judge's comparisons (each test pair in both orders) and the annotator's (its label) ranked and compared."""
    judged = []
    for judgment in judgments:
        chosen, rejected = models[judgment.pair_id]
        first, second = (chosen, rejected) if judgment.order == "chosen_first" else (rejected, chosen)
        winner = {"First": first, "Second": second}.get(judgment.predicted or "")
        judged.append(Comparison(first, second, winner))
    labelled = [Comparison(chosen, rejected, chosen) for chosen, rejected in (models[pair_id(pair)] for pair in test)]
    reference = ranking_scores(given) if given else win_rates(labelled)
    wins, strengths = win_rates(judged), bradley_terry(judged)
    return RankingOutcome(judge=judge, drawn=drawn or {}, judge_wins=wins, judge_bradley_terry=strengths,
                          reference=reference, reference_source="given" if given else "annotator's wins",
                          by_wins=rank_correlation(wins, reference),
                          by_bradley_terry=rank_correlation(strengths, reference))


def _log_evaluation(tracker: Tracker, outcome: EvaluationOutcome, judgments: list[Judgment], output_dir: Path) -> None:
    """The evaluation's metrics, its ranking and the like (a JSON artifact), and the selected judge's judgments (a
    result file)."""
    metrics = {}
    for number, row in enumerate([*outcome.rows, outcome.selected]):
        prefix = "selected_" if row is outcome.selected else f"description_{number}_"
        metrics.update(row.report.as_metrics(prefix))
        metrics[f"{prefix}first_position_share"] = row.first_position.mean
        metrics[f"{prefix}overall_accuracy"] = row.overall
        metrics.update({f"{prefix}topic_{_metric_name(topic)}_accuracy": accuracy
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
    log_json(tracker, {"labels": outcome.labels, "scope": outcome.scope, "reference_scores": outcome.reference_scores,
                       "reference_strategies": outcome.reference_strategies,
                       "ranking": ranking and asdict(ranking)}, "sensejudge-evaluation.json")
    path = write_results(tracker, output_dir / "sensejudge-judgments.jsonl", map(asdict, judgments))
    logger.info("wrote %d judgments of the selected judge to %s", len(judgments), path)
