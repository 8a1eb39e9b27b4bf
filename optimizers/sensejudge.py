"""SenseJudge's preference-subset selection, as a DSPy teleprompter.

The student is a `SelectedJudge` holding every candidate description. `compile` judges every example (labelled pairs
in both orders: `valset` when given, else `trainset`, since the reference selects on the very dev pairs the
descriptions were written from) under every description, chooses the subset of descriptions whose majority vote is
right most often, and returns a `SelectedJudge` of that subset, with what it did in its `selection` attribute. The
paper selects per topic (§4.1.2: 10 dev pairs each) and reports the Overall average of the topics: `select_per_topic`
writes and selects each topic's descriptions on that topic's dev pairs alone.

Votes. Each description is its own prompt prefix, so descriptions are judged in rounds of `num_threads`, each round
in the order `prefcraft.engine.scheduling` gives (every description's first call alone, then the rest interleaved across
descriptions). Every description judges every example, as in the reference. With `stop_when_perfect` (off by default)
the subsets of the descriptions judged so far are scored after each round, and once one is right on every judgment
the remaining descriptions are never judged: that saves calls, but a later description that would tie is never
seen, so the tied-best set (which the reference averages over) can be smaller. Unlike SynthesizeMe's searches
(`candidate_search`'s `exact`), no pruning here leaves the result unchanged: every tied-best subset counts, and until a
description has voted on every judgment, any of its votes can make or break a tie in some subset that holds it. A
failed call is counted in `failed_calls` and, by default, as a vote against the response the user chose
(`unparseable_vote`, as the reference counts an unparseable decision; "abstain" leaves it out).

Search, from the votes alone (no LM calls). Up to `exhaustive_limit` descriptions (12: 4,095 subsets), every non-empty
subset, as the reference does. Beyond, a beam search: the `beam_width` best subsets of each size are extended by one
description each, up to the full set, and the best subset seen at any size wins. A subset's score is the number of
judgments its majority vote gets right, both orders pooled; with `penalize_order_imbalance`, minus the gap between the
two orders' counts (the reference's optional penalty). Among tied-best subsets the saved judge's pick is the first in
the reference's enumeration order (fewest descriptions, then lowest indices).

The reference picks none (analysis.py `select_combinations_by_dev_strategy`, 3_judge_count.py): its score is the test
accuracy averaged over every tied-best subset, unless the worst subsets' decisions, inverted, would be right on more
dev judgments than the best score (judgments minus the worst subset's right ones > the best score): then it averages
the inverted test accuracy of every subset tied for worst. `reference_score` computes it from the test votes of the
subsets the record names (`reference_subsets`, `reference_strategy`); it is the evaluation's headline.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

import dspy
import numpy as np
from dspy.teleprompt import Teleprompter
from tqdm import tqdm

from prefcraft.engine.scheduling import run_phases, warm_then_interleave
from prefcraft.engine.usage import LMUsage, metered
from prefcraft.loaders.personal_reward_bench import PreferencePair, format_conversation, judge_set
from prefcraft.metrics.majority_vote import (
    FIRST,
    NO_VOTE,
    SECOND,
    UnparseableVote,
    decode_vote,
    encode_votes,
    majority_decisions,
)
from prefcraft.programs.sensejudge import DescriptionLength, PreferenceExtractor, SelectedJudge

SubsetSearchMethod = Literal["exhaustive", "beam"]
ReferenceStrategy = Literal["forward_best", "inverted_worst"]
Subset = tuple[int, ...]


@dataclass
class SubsetSelectionConfig:
    """Subset-selection settings. Defaults follow the reference code (up to 12 descriptions, all subsets, every
    description judged, a failed call counted against the chosen response).

    Search: every subset up to `exhaustive_limit` descriptions, else a beam search keeping `beam_width` subsets per
    size; `penalize_order_imbalance` subtracts the gap between the two orders' right answers from a subset's score.
    Votes: `unparseable_vote` is what a failed call counts as ("against" the chosen response, or "abstain"), in the
    search and in the selected judge; `stop_when_perfect` stops judging once a subset is right on every judgment.
    Runtime: `num_threads` parallel calls, and as many descriptions judged per round; `display_progress` shows a bar.
    """

    exhaustive_limit: int = 12
    beam_width: int = 64
    penalize_order_imbalance: bool = False
    unparseable_vote: UnparseableVote = "against"
    stop_when_perfect: bool = False
    num_threads: int = 4
    display_progress: bool = True


@dataclass
class SubsetSearch:
    tied_best: list[Subset]
    """Every subset with the best score, in enumeration order; the first is the pick."""
    score: float
    correct: int
    strategy: SubsetSearchMethod
    subsets_scored: int
    judgments: int
    tied_worst: list[Subset]
    """Every subset scored with the fewest right judgments, in enumeration order."""
    worst_correct: int

    @property
    def best(self) -> Subset:
        return self.tied_best[0]

    @property
    def reference_strategy(self) -> ReferenceStrategy:
        """The reference's rule: invert the worst subsets when their inverted decisions beat the best score."""
        return "inverted_worst" if self.judgments - self.worst_correct > self.score else "forward_best"

    @property
    def reference_subsets(self) -> list[Subset]:
        """The subsets the reference's score averages over."""
        return self.tied_worst if self.reference_strategy == "inverted_worst" else self.tied_best


@dataclass
class SubsetSelectionRecord:
    """What a selection did. Indices refer to the student's descriptions, in order."""

    descriptions: int
    judged_descriptions: int
    examples: int
    selected: list[int]
    accuracy: float
    """Dev accuracy of the selected subset's majority vote, over every judgment (both orders)."""
    tied_best: list[list[int]]
    strategy: SubsetSearchMethod
    subsets_scored: int
    failed_calls: int
    stopped_early: bool
    reference_strategy: ReferenceStrategy = "forward_best"
    reference_subsets: list[list[int]] = field(default_factory=list)
    """The subsets whose test accuracy the reference's score averages: the tied-best, or the tied-worst inverted."""
    description_accuracy: list[float] = field(default_factory=list)
    votes: list[list[str | None]] = field(default_factory=list)


class SubsetSelection(Teleprompter):
    def __init__(self, config: SubsetSelectionConfig | None = None):
        super().__init__()
        self.config = config or SubsetSelectionConfig()

    def compile(
        self, student: SelectedJudge, *, trainset: Sequence[dspy.Example], valset: Sequence[dspy.Example] | None = None
    ) -> SelectedJudge:
        examples = list(valset or trainset)
        if not examples or not student.judges:
            raise ValueError("SubsetSelection needs examples and a SelectedJudge with at least one description")
        gold = encode_votes([[example.preference for example in examples]])[0]
        done = (lambda votes: self._search(votes, gold).correct == len(examples)) if self.config.stop_when_perfect \
            else None
        votes = collect_votes(student.judges, examples, num_threads=self.config.num_threads, done=done,
                              progress=self.config.display_progress)
        search = self._search(votes, gold)
        program = student.deepcopy()
        program.judges = [program.judges[index] for index in search.best]
        program.unparseable_vote = self.config.unparseable_vote
        program.selection = self._record(student, votes, gold, search)
        return program

    def _search(self, votes: np.ndarray, gold: np.ndarray) -> SubsetSearch:
        return search_subsets(votes, gold, exhaustive_limit=self.config.exhaustive_limit,
                              beam_width=self.config.beam_width,
                              penalize_order_imbalance=self.config.penalize_order_imbalance,
                              unparseable=self.config.unparseable_vote)

    def _record(
        self, student: SelectedJudge, votes: np.ndarray, gold: np.ndarray, search: SubsetSearch
    ) -> SubsetSelectionRecord:
        total = len(gold)
        return SubsetSelectionRecord(
            descriptions=len(student.judges), judged_descriptions=len(votes), examples=total,
            selected=list(search.best), accuracy=search.correct / total,
            tied_best=[list(subset) for subset in search.tied_best], strategy=search.strategy,
            subsets_scored=search.subsets_scored, failed_calls=int((votes == NO_VOTE).sum()),
            stopped_early=len(votes) < len(student.judges), reference_strategy=search.reference_strategy,
            reference_subsets=[list(subset) for subset in search.reference_subsets],
            description_accuracy=[float((row == gold).mean()) for row in votes],
            votes=[[decode_vote(vote) for vote in row] for row in votes],
        )  # fmt: skip


@dataclass
class TopicSelection:
    """One topic's selection: the descriptions written from its dev pairs, the judge selected among them (its
    `selection` attribute is the `SubsetSelectionRecord`), the descriptions whose call failed (position: error; left
    empty), and the LM usage of writing ("extraction") and of judging under each description ("selection")."""

    descriptions: list[str]
    judge: SelectedJudge
    usage: dict[str, LMUsage] = field(default_factory=dict)
    failed_descriptions: dict[int, str] = field(default_factory=dict)


def select_per_topic(
    dev_by_topic: Mapping[str, Sequence[PreferencePair]], *, config: SubsetSelectionConfig | None = None,
    max_pair_descriptions: int | None = None, description_length: DescriptionLength = "one_sentence",
    written_from: Mapping[str, Sequence[PreferencePair]] | None = None,
    writing: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> dict[str, TopicSelection]:
    """The paper's setting (§4.1.2): each topic's descriptions are written from that topic's dev pairs alone (10 per
    topic in the paper) and selected on them, in both orders. Each topic's test pairs are then judged by its own judge,
    and Overall is the unweighted mean of the topics' accuracies (Table 1). One group of every dev pair gives the
    selection over all pairs. `written_from`: each topic's dev pairs as the extractor reads them, where the judge reads
    them shortened (the same pairs, in the same order; default: `dev_by_topic`). Judges on the model of the current
    context, and writes inside `writing()` (default: the same model, as the reference's run_right.sh does)."""
    written_from = written_from or dev_by_topic
    selections = {}
    for topic, pairs in dev_by_topic.items():
        extractor = PreferenceExtractor(max_pair_descriptions, description_length)
        with metered() as extraction, writing():
            extracted = extractor(pairs=[extraction_input(pair) for pair in written_from[topic]])
        descriptions = list(extracted.descriptions)
        with metered() as selection:
            judge = SubsetSelection(config).compile(SelectedJudge(descriptions), trainset=judge_set(pairs))
        selections[topic] = TopicSelection(descriptions, judge, {"extraction": extraction.usage,
                                                                 "selection": selection.usage},
                                           dict(extracted.failures))
    return selections


def extraction_input(pair: PreferencePair) -> dict[str, str]:
    """A labelled pair as `PreferenceExtractor` reads it."""
    return {"conversation": format_conversation(pair.context), "chosen_response": pair.chosen.content,
            "rejected_response": pair.rejected.content}


def collect_votes(
    judges: Sequence[dspy.Module], examples: Sequence[dspy.Example], *, num_threads: int,
    done: Callable[[np.ndarray], bool] | None = None, progress: bool = True,
) -> np.ndarray:
    """The (judged judges, examples) votes, judged in rounds of `num_threads` judges; stops after the first round for
    which `done(votes so far)` holds. A failed call is no vote."""
    predictions: list[list[str | None]] = []
    with tqdm(total=len(judges), desc="judging under each description", unit="description",
              disable=not progress) as bar:
        for start in range(0, len(judges), num_threads):
            stop = min(start + num_threads, len(judges))
            groups = [[(judge, index) for index in range(len(examples))] for judge in range(start, stop)]
            phases = warm_then_interleave(groups)
            outputs = run_phases([[(judges[judge], examples[index]) for judge, index in phase] for phase in phases],
                                 num_threads)
            block = [[None] * len(examples) for _ in range(start, stop)]
            jobs = [job for phase in phases for job in phase]
            for (judge, index), output in zip(jobs, outputs, strict=True):
                block[judge - start][index] = getattr(output, "preference", None)
            predictions += block
            bar.update(stop - start)
            if done is not None and stop < len(judges) and done(encode_votes(predictions)):
                break
    return encode_votes(predictions)


def search_subsets(
    votes: np.ndarray, gold: np.ndarray, *, exhaustive_limit: int = 12, beam_width: int = 64,
    penalize_order_imbalance: bool = False, unparseable: UnparseableVote = "against",
) -> SubsetSearch:
    """The best subsets of the (descriptions, judgments) `votes` against `gold` (FIRST / SECOND per judgment)."""
    count = len(votes)
    if count == 0:
        raise ValueError("search_subsets needs the votes of at least one description")
    if count <= exhaustive_limit:
        strategy: SubsetSearchMethod = "exhaustive"
        subsets = [subset for size in range(1, count + 1) for subset in itertools.combinations(range(count), size)]
        scores, correct = score_subsets(votes, gold, subsets, penalize_order_imbalance, unparseable)
    else:
        strategy = "beam"
        subsets, scores, correct = _beam_search(votes, gold, beam_width, penalize_order_imbalance, unparseable)
    tied = np.flatnonzero(scores == scores.max())
    worst = np.flatnonzero(correct == correct.min())
    return SubsetSearch(tied_best=[subsets[i] for i in tied], score=float(scores[tied[0]]),
                        correct=int(correct[tied[0]]), strategy=strategy, subsets_scored=len(subsets),
                        judgments=len(gold), tied_worst=[subsets[i] for i in worst],
                        worst_correct=int(correct[worst[0]]))


def score_subsets(
    votes: np.ndarray, gold: np.ndarray, subsets: Sequence[Subset], penalize_order_imbalance: bool = False,
    unparseable: UnparseableVote = "against",
) -> tuple[np.ndarray, np.ndarray]:
    """Each subset's score and number of right majority-vote judgments."""
    masks = np.zeros((len(subsets), len(votes)), dtype=np.int8)
    for row, subset in enumerate(subsets):
        masks[row, list(subset)] = 1
    right = majority_decisions(votes, masks, unparseable) == gold[None, :]
    correct = right.sum(axis=1)
    if not penalize_order_imbalance:
        return correct.astype(float), correct
    gap = np.abs(right[:, gold == FIRST].sum(axis=1) - right[:, gold == SECOND].sum(axis=1))
    return (correct - gap).astype(float), correct


def reference_score(
    votes: np.ndarray, gold: np.ndarray, subsets: Sequence[Subset], strategy: ReferenceStrategy = "forward_best",
    unparseable: UnparseableVote = "against",
) -> float:
    """The reference's score (3_judge_count.py): the mean accuracy of the `subsets`' majority votes over every
    judgment; with "inverted_worst", of their opposite decisions: a judgment is right where the vote was wrong (under
    "abstain", where the subset cast no vote, it decides nothing either way)."""
    masks = np.zeros((len(subsets), len(votes)), dtype=np.int8)
    for row, subset in enumerate(subsets):
        masks[row, list(subset)] = 1
    decisions = majority_decisions(votes, masks, unparseable)
    right = decisions == gold[None, :]
    if strategy == "inverted_worst":
        decided = decisions != NO_VOTE if unparseable == "abstain" else np.ones_like(right)
        right = decided & ~right
    return float(right.mean())


def _beam_search(
    votes: np.ndarray, gold: np.ndarray, beam_width: int, penalize_order_imbalance: bool, unparseable: UnparseableVote
) -> tuple[list[Subset], np.ndarray, np.ndarray]:
    """Every subset the beam scored, in enumeration order, with its score and right judgments."""
    count = len(votes)
    seen: dict[Subset, tuple[float, int]] = {}
    beam: list[Subset] = [()]
    for _ in range(count):
        extended = sorted({tuple(sorted((*subset, index))) for subset in beam for index in range(count)
                           if index not in subset}, key=_enumeration_order)
        scores, correct = score_subsets(votes, gold, extended, penalize_order_imbalance, unparseable)
        seen.update(zip(extended, zip(scores.tolist(), correct.tolist(), strict=True), strict=True))
        ranked = sorted(range(len(extended)), key=lambda i: (-scores[i], _enumeration_order(extended[i])))
        beam = [extended[i] for i in ranked[:beam_width]]
    subsets = sorted(seen, key=_enumeration_order)
    return subsets, np.array([seen[s][0] for s in subsets]), np.array([seen[s][1] for s in subsets])


def _enumeration_order(subset: Subset) -> tuple[int, Subset]:
    return len(subset), subset
