"""The labelled pairs `select` and `evaluate` read: one annotator's, from SenseBench's human labels (`--human-labels`,
split into dev and test pairs as the reference splits them) or from a PersonalRewardBench-schema file such as
`simulate` writes (`--data`, split by its `split` column)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prefcraft.components.sensejudge.human_labels import LabelSplit, annotator_file, load_human_labels
from prefcraft.components.sensejudge.options import EvaluatingOptions, HumanLabelOptions, SelectingOptions
from prefcraft.components.sensejudge.simulation import load_pair_annotations, load_pair_topics
from prefcraft.components.synthesizeme.evaluation import select_users
from prefcraft.errors import ConfigError
from prefcraft.loaders.personal_reward_bench import PreferencePair, UserPairs, group_by_user, load_pairs, pair_id
from prefcraft.tracking.runs import data_digest

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnnotatorPairs:
    """One annotator's labelled pairs, as the judge reads them, with what the steps need to know of each."""

    annotator: UserPairs
    source: Path
    digest: str
    """What the pairs are, so that a judge is evaluated only on the data it was selected on: the file's digest, and
    for human labels the split (which pairs are dev pairs)."""
    labels: str
    """Who labelled the pairs: "human (<annotator>)", or the file's `labels` column (read with the models)."""
    topic_of: dict[str, str] = field(default_factory=dict)
    """Each pair's topic, by pair id (empty unless asked for)."""
    models: dict[str, tuple[str, str]] | None = None
    """Each pair's (chosen model, rejected model), by pair id; None where the data does not name them."""
    written_from: dict[str, PreferencePair] = field(default_factory=dict)
    """The pairs the preference extractor reads otherwise than the judge (human labels' full inputs), by pair id."""
    params: dict[str, object] = field(default_factory=dict)
    """How the pairs were read, for a run's params."""

    def as_written(self, pairs: Sequence[PreferencePair]) -> list[PreferencePair]:
        """`pairs` as the preference extractor reads them."""
        return [self.written_from.get(pair_id(pair), pair) for pair in pairs]


def read_annotator_pairs(
    options: SelectingOptions | EvaluatingOptions, annotator: str | None, *, topics: bool, models: bool
) -> AnnotatorPairs:
    """The pairs of `annotator` (None: the only one) from `options`' human labels when given, else from its pairs
    file; `topics` and `models`: read each pair's topic, and its response models (which a pairs file must name)."""
    if _human_labels(options):
        return _human_labelled(options, annotator)
    path = options.data
    pairs = load_pairs(path)
    ids = [pair_id(pair) for pair in pairs]
    chosen = _annotator(group_by_user(pairs), path, annotator)
    topic_of = dict(zip(ids, load_pair_topics(path), strict=True)) if topics else {}
    if not models:
        return AnnotatorPairs(chosen, path, data_digest(path), "not read", topic_of)
    annotations = dict(zip(ids, load_pair_annotations(path), strict=True))
    mine = [annotations[pair_id(pair)] for pair in (*chosen.context_pairs, *chosen.test)]
    return AnnotatorPairs(chosen, path, data_digest(path), ", ".join(sorted({labels for _, _, labels in mine})),
                          topic_of, {key: (first, second) for key, (first, second, _) in annotations.items()})


def pairs_digest(options: SelectingOptions | EvaluatingOptions, annotator: str | None) -> tuple[Path, str]:
    """The file `read_annotator_pairs` reads the pairs of `annotator` from, and its `digest`, without reading it."""
    if _human_labels(options):
        path = annotator_file(options.human_labels, annotator)
        return path, _split_digest(path, options.label_split())
    return options.data, data_digest(options.data)


def _human_labels(options: SelectingOptions | EvaluatingOptions) -> bool:
    return isinstance(options, HumanLabelOptions) and options.human_labels is not None


def _split_digest(path: Path, split: LabelSplit) -> str:
    return f"{data_digest(path)}, {split.dev_pairs_per_topic} dev pairs per topic, seed {split.seed}"


def _human_labelled(options: HumanLabelOptions, annotator: str | None) -> AnnotatorPairs:
    split = options.label_split()
    labels = load_human_labels(options.human_labels, annotator, split)
    dev, test = [label.judged for label in labels.dev], [label.judged for label in labels.test]
    every = [*labels.dev, *labels.test]
    logger.info("%s: %d dev and %d test pairs of %d topics; %d duplicates dropped, %d judged inputs cut to their last "
                "turn", labels.path, len(dev), len(test), len({label.topic for label in every}), labels.duplicates,
                labels.inputs_cut)
    return AnnotatorPairs(
        UserPairs(labels.annotator, train=dev, test=test), labels.path, _split_digest(labels.path, split),
        f"human ({labels.annotator})", {pair_id(label.judged): label.topic for label in every},
        written_from={pair_id(label.judged): label.written_from for label in every},
        params={"labels": "human", "dev_pairs_per_topic": split.dev_pairs_per_topic, "split_seed": split.seed,
                "max_input_tokens": split.max_input_tokens, "duplicates_dropped": labels.duplicates,
                "inputs_cut": labels.inputs_cut, "topics_left_out": sorted(labels.small_topics)},
    )  # fmt: skip


def _annotator(users: dict[str, UserPairs], path: Path, wanted: str | None) -> UserPairs:
    if wanted is not None:
        return select_users(users, [wanted])[wanted]
    if len(users) > 1:
        raise ConfigError(f"{path} holds the pairs of {len(users)} annotators", "choose one with --annotator")
    return next(iter(users.values()))
