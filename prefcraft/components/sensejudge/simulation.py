"""`prefcraft sensejudge simulate`: labelled pairs on real SenseBench requests. The labels are SIMULATED.

Responses: for each dialogue, one response per response model (`response_models`), each the task model under a
system prompt of its own (`VARIANTS`), so that responses differ in a known way (length, structure). Labels: a simulated
annotator, the judge model given `persona` as its user context, picks one response of every pair of response models,
shown in a seeded random order. Each topic's dialogues are taken in a seeded order; as in the paper, where every
topic has dev and test examples, the first `dev_dialogues` of a topic that yield a pair give its dev pairs (split
`train`), the next `test_dialogues` its test pairs. Rows follow the PersonalRewardBench schema (`prefcraft evaluate
--data` reads them too) plus `chosen_model`, `rejected_model`, `topic` (the dialogue's SenseBench topic, which `select`
groups the dev pairs by), `labels` ("simulated") and `annotator_persona`.

A response or a label whose call failed drops the pairs it belongs to, and a pair whose two responses are the same
(a small model often ignores the system prompt) is dropped before labelling: no one could prefer either. All three are
counted.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections import Counter
from pathlib import Path
from typing import ClassVar

import dspy

from prefcraft.components.sensejudge.data import Dialogue, load_dialogues
from prefcraft.components.sensejudge.results import SimulationSummary
from prefcraft.engine.adapter import LengthBounds, SchemaAdapter
from prefcraft.engine.session import lm_context
from prefcraft.engine.usage import metered
from prefcraft.errors import ConfigError, DataError
from prefcraft.loaders.personal_reward_bench import format_conversation, read_rows
from prefcraft.options import OneOrMore, Options, Positive, option
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.responder import Responder
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, data_digest, model_params

logger = logging.getLogger(__name__)

LABELS = "simulated"
ANNOTATOR_ID = "simulated_annotator"
ANNOTATOR_HEADING = "The annotator has the following persona"
VARIANTS = {
    "plain": "",
    "concise": "Answer in one or two short sentences. No lists, no headings, no preamble.",
    "detailed": "Answer at length: explain step by step in a numbered list, give an example, and end with a summary.",
}
DEFAULT_PERSONA = ("A busy professional who wants short, direct answers that get to the point at once, and dislikes "
                   "long, padded or list-heavy replies.")
MODEL_COLUMNS = ("chosen_model", "rejected_model")


class SimulationConfig(Options):
    """What to simulate, as the simulating steps' options: their flags. Dialogues: `dev_dialogues` + `test_dialogues`
    of each topic in `topics` (None: every topic of the file) drawn with the session's seed; each keeps the latest
    turns that fit in `max_context_chars`. Responses: one per response model in `response_models` (names of
    `VARIANTS`), at most `max_response_chars` long, sampled at `response_temperature` (at 0 a small model often gives
    two response models the same reply). Labels: the judge model given `persona`, at the judge's own temperature.
    `variants`, the former name of `response_models`, is taken for one release."""

    renamed_options: ClassVar[dict[str, str]] = {"variants": "response_models"}

    topics: OneOrMore[str] | None = option(None, "SenseBench topics to draw dialogues from (default: every topic of "
                                           "the file, as in the paper)", metavar="TOPIC")
    dev_dialogues: Positive = option(4, "dialogues per topic whose pairs are dev pairs")
    test_dialogues: Positive = option(2, "dialogues per topic whose pairs are test pairs")
    response_models: OneOrMore[str] = option(["plain", "concise", "detailed"],
                                             "response models: the task model under these system prompts")
    persona: str = option(DEFAULT_PERSONA, "the simulated annotator's persona (default: wants short answers)")
    max_context_chars: int = option(1200, "dialogue turns kept per request")
    max_response_chars: int = option(600, "longest response")
    response_temperature: float = option(0.7, "sampling of the responses")

    def params(self, seed: int) -> dict[str, object]:
        """The simulation's MLflow params: every setting above and the seed the dialogues and orders are drawn with."""
        return {**{name: getattr(self, name) for name in SimulationConfig.model_fields}, "seed": seed}


def read_dialogues(source: Path, config: SimulationConfig) -> list[Dialogue]:
    """The dialogues of `source`, checked against what `config` draws from them; raises for a bad file or config (a
    step reads them before any model starts)."""
    unknown = sorted(set(config.response_models) - set(VARIANTS))
    if unknown or len(set(config.response_models)) < 2:
        raise ConfigError(f"response models must be two or more of {', '.join(VARIANTS)} "
                          f"(got {', '.join(config.response_models)})")
    dialogues = load_dialogues(source)
    counts = Counter(dialogue.topic for dialogue in dialogues)
    topics = config.topics or sorted(counts)
    if not topics:
        raise ConfigError(f"{source} holds no dialogues")
    missing = [topic for topic in topics if topic not in counts]
    if missing:
        raise ConfigError(f"{source} has no dialogues of the topics {', '.join(missing)}",
                          f"its topics: {', '.join(sorted(counts))}")
    wanted = config.dev_dialogues + config.test_dialogues
    short = [topic for topic in topics if wanted > counts[topic]]
    if config.dev_dialogues < 1 or config.test_dialogues < 1 or short:
        fewest = min(counts[topic] for topic in topics)
        raise ConfigError(f"cannot draw {config.dev_dialogues} dev and {config.test_dialogues} test dialogues per "
                          f"topic from {fewest} (topics {', '.join(topics)})",
                          "ask for at least one of each, and no more than every topic holds")
    return dialogues


def sample_dialogues(dialogues: list[Dialogue], config: SimulationConfig, seed: int) -> dict[str, list[Dialogue]]:
    """Each wanted topic's dialogues (`read_dialogues`), in an order drawn with `seed`: the first ones are used, the
    next ones replace dialogues that yield no pair."""
    by_topic: dict[str, list[Dialogue]] = {}
    for dialogue in random.Random(seed).sample(dialogues, len(dialogues)):
        by_topic.setdefault(dialogue.topic, []).append(dialogue)
    return {topic: by_topic[topic] for topic in config.topics or sorted(by_topic)}


def simulation_params(session: Settings, source: Path, config: SimulationConfig) -> dict[str, object]:
    """The simulate run's params: the dialogues' file and digest, the labels' kind, the simulation's settings and
    seed (`SimulationConfig.params`) and the models'."""
    return {"dialogues": str(source), "dialogues_digest": data_digest(source), "labels": LABELS,
            **config.params(session.seed), **model_params(session)}


def simulate_pairs(
    session: Settings, tracker: StepTracker, pools: dict[str, list[Dialogue]], output: Path, config: SimulationConfig,
) -> SimulationSummary:
    """Write labelled pairs to `output` (JSON lines) from the first dialogues of each topic's pool
    (`sample_dialogues`) that yield at least one pair; `session` has reachable models. Its metrics and files go to
    the run `tracker` records in (the simulate run, `simulation_params`).

    A dialogue whose pairs all fail or come out identical is replaced by the next one of its topic, up to as many
    replacements as dialogues wanted per topic; identical responses are found before labelling, so they cost no
    annotator call. Every topic's dialogues are simulated together, in rounds.
    """
    wanted = {topic: {"train": config.dev_dialogues, "test": config.test_dialogues} for topic in pools}
    rows: list[dict[str, object]] = []
    summary = SimulationSummary(path=output, dev_pairs=0, test_pairs=0, dialogues=[])
    rng = random.Random(session.seed)
    positions = dict.fromkeys(pools, 0)
    limit = 2 * (config.dev_dialogues + config.test_dialogues)
    while batch := _next_round(pools, wanted, positions, limit):
        for dialogue, dialogue_rows in zip(batch, _simulate(session, batch, config, rng, summary), strict=True):
            if not dialogue_rows:
                summary.replaced_dialogues += 1
                continue
            split = "train" if wanted[dialogue.topic]["train"] else "test"
            wanted[dialogue.topic][split] -= 1
            summary.dialogues.append(dialogue.index)
            rows += [{**row, "split": split} for row in dialogue_rows]
    summary.dev_pairs = sum(row["split"] == "train" for row in rows)
    summary.test_pairs = len(rows) - summary.dev_pairs
    summary.topics = {topic: [sum(row["topic"] == topic and row["split"] == split for row in rows)
                              for split in ("train", "test")] for topic in pools}
    tracker.write_results(output, rows)
    tracker.log_metrics({"dev_pairs": summary.dev_pairs, "test_pairs": summary.test_pairs,
                         "replaced_dialogues": summary.replaced_dialogues,
                         "failed_responses": summary.failed_responses, "failed_labels": summary.failed_labels,
                         "identical_pairs": summary.identical_pairs,
                         **summary.usage["responses"].as_metrics("responses_"),
                         **summary.usage["labels"].as_metrics("labels_")})
    tracker.log_json({"dialogue_indices": summary.dialogues, "topics": summary.topics}, "dialogues.json")
    empty = {topic: counts for topic, counts in summary.topics.items() if 0 in counts}
    if empty:
        raise DataError(output, None, None, "topics left without dev or test pairs (dev, test): " +
                        ", ".join(f"{topic} {dev}, {test}" for topic, (dev, test) in empty.items()),
                        "check the server log for failed calls, or simulate with other response models")
    return summary


def _next_round(
    pools: dict[str, list[Dialogue]], wanted: dict[str, dict[str, int]], positions: dict[str, int], limit: int
) -> list[Dialogue]:
    """The next dialogues of every topic that still wants some, within its first `limit`; moves `positions` on."""
    batch = []
    for topic, pool in pools.items():
        stop = min(positions[topic] + sum(wanted[topic].values()), limit, len(pool))
        batch += pool[positions[topic]: stop]
        positions[topic] = stop
    return batch


def load_pair_annotations(path: Path) -> list[tuple[str, str, str]]:
    """The (chosen model, rejected model, label source) of each row of a file written by `simulate_pairs`, in the
    order `load_pairs(path)` reads its pairs."""
    annotations = []
    for index, row in enumerate(read_rows(path)):
        missing = [column for column in MODEL_COLUMNS if not isinstance(row.get(column), str)]
        if missing:
            raise DataError(path, index, missing[0], "missing the name of a response model",
                            "model ranking needs pairs written by `prefcraft sensejudge simulate`")
        annotations.append((row["chosen_model"], row["rejected_model"], str(row.get("labels", "not stated"))))
    return annotations


def load_pair_topics(path: Path) -> list[str]:
    """The `topic` of each row of `path`, in the order `load_pairs(path)` reads its pairs."""
    topics = []
    for index, row in enumerate(read_rows(path)):
        if not isinstance(row.get("topic"), str):
            raise DataError(path, index, "topic", "missing the pair's topic, which per-topic selection groups by",
                            "simulate the pairs with `prefcraft sensejudge simulate`, or select over all pairs with "
                            "--scope all")
        topics.append(row["topic"])
    return topics


def _conversation(dialogue: Dialogue, config: SimulationConfig) -> str:
    return format_conversation(dialogue.messages(config.max_context_chars))


def _simulate(
    session: Settings, dialogues: list[Dialogue], config: SimulationConfig, rng: random.Random,
    summary: SimulationSummary,
) -> list[list[dict[str, object]]]:
    """Each dialogue's labelled rows (no split yet); failures and identical pairs are counted in `summary`."""
    with lm_context(session, "task"), metered() as responding:
        bounds = LengthBounds(string_chars=config.max_response_chars)
        adapter = SchemaAdapter(dialect=session.task.dialect, bounds=bounds)
        with dspy.context(adapter=adapter):
            responses = _respond(dialogues, config, session.threads)
    jobs = []
    for dialogue in dialogues:
        seen: set[frozenset[str]] = set()
        for pair in itertools.combinations(config.response_models, 2):
            texts = [responses[(dialogue.index, variant)] for variant in pair]
            if None in texts:
                continue
            # Two response models that answered alike would make two rows of one pair (one pair id): keep the first.
            if texts[0] == texts[1] or frozenset(texts) in seen:
                summary.identical_pairs += 1
                continue
            seen.add(frozenset(texts))
            jobs.append((dialogue, *(pair if rng.random() < 0.5 else pair[::-1])))
    with lm_context(session, "judge"), metered() as labelling:
        labelled = _label(jobs, responses, config, session.threads)
    summary.usage["responses"] += responding.usage
    summary.usage["labels"] += labelling.usage
    summary.failed_responses += sum(response is None for response in responses.values())
    summary.failed_labels += sum(row is None for row in labelled)
    by_dialogue: dict[int, list[dict[str, object]]] = {dialogue.index: [] for dialogue in dialogues}
    for (dialogue, _, _), row in zip(jobs, labelled, strict=True):
        if row is not None:
            by_dialogue[dialogue.index].append(row)
    return [by_dialogue[dialogue.index] for dialogue in dialogues]


def _respond(
    dialogues: list[Dialogue], config: SimulationConfig, num_threads: int
) -> dict[tuple[int, str], str | None]:
    """Each variant's response to each dialogue; None where the call failed."""
    responses: dict[tuple[int, str], str | None] = {}
    examples = [dspy.Example(conversation=_conversation(d, config)).with_inputs("conversation") for d in dialogues]
    for variant in config.response_models:
        logger.info("responding as %s", variant)
        responder = Responder(VARIANTS[variant], temperature=config.response_temperature)
        predictions = responder.batch(examples, num_threads=num_threads, max_errors=len(examples) + 1)
        for dialogue, prediction in zip(dialogues, predictions, strict=True):
            responses[(dialogue.index, variant)] = getattr(prediction, "response", None)
    return responses


def _label(
    jobs: list[tuple[Dialogue, str, str]], responses: dict[tuple[int, str], str | None], config: SimulationConfig,
    num_threads: int,
) -> list[dict[str, object] | None]:
    """One row per (dialogue, variant shown first, variant shown second); None where the annotator's call failed."""
    examples = [
        dspy.Example(conversation=_conversation(dialogue, config),
                     first_completion=responses[(dialogue.index, first)],
                     second_completion=responses[(dialogue.index, second)],
                     ).with_inputs("conversation", "first_completion", "second_completion")
        for dialogue, first, second in jobs
    ]
    annotator = PreferenceJudge(config.persona, heading=ANNOTATOR_HEADING)
    predictions = annotator.batch(examples, num_threads=num_threads, max_errors=len(examples) + 1) if jobs else []
    rows: list[dict[str, object] | None] = []
    for (dialogue, first, second), prediction in zip(jobs, predictions, strict=True):
        preference = getattr(prediction, "preference", None)
        if preference is None:
            rows.append(None)
            continue
        chosen, rejected = (first, second) if preference == "First" else (second, first)
        rows.append({
            "user_id": ANNOTATOR_ID, "conversation_id": f"sensebench-{dialogue.index}",
            "context": [message.model_dump() for message in dialogue.messages(config.max_context_chars)],
            "chosen": {"role": "assistant", "content": responses[(dialogue.index, chosen)]},
            "rejected": {"role": "assistant", "content": responses[(dialogue.index, rejected)]},
            "chosen_model": chosen, "rejected_model": rejected, "topic": dialogue.topic, "labels": LABELS,
            "annotator_persona": config.persona,
        })
    return rows
