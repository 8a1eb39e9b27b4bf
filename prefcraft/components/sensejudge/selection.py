"""`prefcraft sensejudge select`: preference descriptions written from one annotator's dev pairs (SenseBench's human
labels, `human_labels`, split as the reference splits them, or a file of pairs such as `simulate` writes, `data`), and
the subset whose majority vote judges them best. One MLflow run, which the runner opens ("sensejudge-select",
`selection_params`).

As the paper does (§4.1.2), per topic by default (`scope`): the preference extractor writes each topic's candidate
descriptions from that topic's dev pairs (the annotator's train and val pairs) on the prompt model (the task model
unless the settings name one: the reference's judge writes its own), a failed description left empty and counted, and
`SubsetSelection` judges every one of them under every description in both orders and keeps the best subset; with
scope "all", once over every dev pair. The `SelectedJudge`, holding each topic's subset, is saved as compiled JSON,
with each topic's candidates, votes and tied-best subsets in its metadata. The dev pairs are read before any model
starts (`read_dev_pairs`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

from prefcraft.components.component import StepRun
from prefcraft.components.sensejudge.options import SelectingOptions
from prefcraft.components.sensejudge.pairs import AnnotatorPairs, read_annotator_pairs
from prefcraft.components.sensejudge.results import SelectionOutcome
from prefcraft.components.sensejudge.topics import ALL_TOPICS, by_topic, metric_name
from prefcraft.engine.lm import check_reachable
from prefcraft.engine.session import lm_context
from prefcraft.engine.usage import LMUsage
from prefcraft.errors import ConfigError
from prefcraft.loaders.personal_reward_bench import PreferencePair
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.optimizers.sensejudge import (
    SubsetSelectionConfig,
    SubsetSelectionRecord,
    TopicSelection,
    select_per_topic,
)
from prefcraft.programs.sensejudge import SelectedJudge
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, model_params

logger = logging.getLogger(__name__)

SENSEJUDGE = "sensejudge"
PROGRAMS = {SENSEJUDGE: lambda metadata: SelectedJudge()}
"""The program a compiled file names, built fresh (`prefcraft.load`)."""


@dataclass(frozen=True)
class DevPairs:
    """What `select` reads: the annotator's dev pairs (splits train and val), grouped as the selection's scope says."""

    pairs: AnnotatorPairs
    groups: dict[str, list[PreferencePair]]
    """Each topic's dev pairs; all of them under `ALL_TOPICS` when selected over all pairs."""


def select(options: SelectingOptions, run: StepRun) -> SelectionOutcome:
    return select_descriptions(run.session, run.tracker, options, run.loaded)


def read_dev_pairs(options: SelectingOptions) -> DevPairs:
    """The annotator's dev pairs (`read_annotator_pairs`), per topic or all together (as `options.scope` says)."""
    pairs = read_annotator_pairs(options, options.annotator, topics=options.scope == "topic", models=False)
    dev = pairs.annotator.context_pairs
    if not dev:
        raise ConfigError(f"annotator {pairs.annotator.user_id} has no dev pairs (split train or val) in "
                          f"{pairs.source}")
    groups = by_topic(dev, pairs.topic_of) if options.scope == "topic" else {ALL_TOPICS: dev}
    return DevPairs(pairs, groups)


def selection_params(options: SelectingOptions, run: StepRun) -> dict[str, object]:
    """The select run's params: the dev pairs `read_dev_pairs` read (`run.loaded`), how the descriptions are written
    and selected, and the models."""
    dev: DevPairs = run.loaded
    pairs, session = dev.pairs, run.session
    annotator = pairs.annotator
    return {"program": SENSEJUDGE, "data": str(pairs.source), "data_digest": pairs.digest, **pairs.params,
            "annotator": annotator.user_id, "dev_pairs": len(annotator.context_pairs), "scope": options.scope,
            "topics": len(dev.groups), "max_pair_descriptions": options.max_pair_descriptions,
            "description_length": options.description_length,
            **_settings_of(options.selection(session.threads)), **model_params(session)}


def select_descriptions(
    session: Settings, tracker: StepTracker, options: SelectingOptions, dev: DevPairs
) -> SelectionOutcome:
    """Extract candidate descriptions from the dev pairs and select a subset, per topic or once over all of them (as
    `options.scope` says); save the SelectedJudge to `options.judge_file`, logged with the metrics to the run
    `tracker` records in (the select run, `selection_params`)."""
    pairs, groups = dev.pairs, dev.groups
    annotator = pairs.annotator
    config = options.selection(session.threads)
    with lm_context(session, "task"):
        selections = select_per_topic(
            groups, config=config, max_pair_descriptions=options.max_pair_descriptions,
            description_length=options.description_length,
            written_from={topic: pairs.as_written(topic_pairs) for topic, topic_pairs in groups.items()},
            writing=lambda: lm_context(session, "prompt"))
        outcome = SelectionOutcome(options.judge_file, options.scope, selections, usage={
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
        save_compiled(judge, options.judge_file, program_name=SENSEJUDGE, model=session.task.model,
                      data=str(pairs.source), data_digest=pairs.digest, annotator=annotator.user_id,
                      read_as=pairs.params, description_length=options.description_length,
                      scope=options.scope,
                      topics={topic: _selection_metadata(selection) for topic, selection in selections.items()},
                      score={"dev_accuracy": outcome.dev_accuracy}, optimizer=_settings_of(config))
        tracker.log_metrics({
            "dev_accuracy": outcome.dev_accuracy, "topics": len(groups),
            **{f"topic_{metric_name(topic)}_dev_accuracy": record.accuracy
               for topic, record in records.items() if options.scope == "topic"},
            "descriptions": sum(record.descriptions for record in records.values()),
            "judged_descriptions": sum(record.judged_descriptions for record in records.values()),
            "selected": sum(len(record.selected) for record in records.values()),
            "tied_best_subsets": sum(len(record.tied_best) for record in records.values()),
            "failed_calls": failed_calls, "failed_descriptions": failed_descriptions,
            **{f"{step}_{name}": value for step, step_usage in outcome.usage.items()
               for name, value in step_usage.as_metrics().items()}})
        tracker.log_file(options.judge_file)
    return outcome


def description_names(count: int) -> list[str]:
    """Names of the extractor's descriptions, in its order: none, one per dev pair, the aggregate."""
    return ["no description", *[f"dev pair {number}" for number in range(1, count - 1)], "aggregate"]


def _selection_metadata(selection: TopicSelection) -> dict[str, object]:
    """One topic's selection as the compiled file's metadata keeps it: what `evaluate` reads, and the record."""
    record: SubsetSelectionRecord = selection.judge.selection
    names = description_names(len(selection.descriptions))
    return {"descriptions": [selection.descriptions[index] for index in record.selected],
            "candidate_descriptions": selection.descriptions, "description_names": names,
            "failed_descriptions": {names[position]: error
                                    for position, error in selection.failed_descriptions.items()},
            "record": asdict(record)}


def _settings_of(config: SubsetSelectionConfig) -> dict[str, object]:
    """The settings that change a selection's result (threads and progress bars only change how it runs)."""
    return {name: value for name, value in asdict(config).items() if name not in ("num_threads", "display_progress")}
