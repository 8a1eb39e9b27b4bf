"""`evaluate`'s model ranking: the response models ranked by wins and by a Bradley-Terry fit, against the
annotator's own ranking (by the labels' wins) or a given one. The ranking judge is by default the paper's (§4.1.3,
§4.2.2): in each topic, `ranking_descriptions` of its written descriptions drawn at random with the session's seed,
their majority vote on each test judgment taken from the votes already collected (no more calls; a tie or a failed
vote counts by the selection's rules, since the paper assumes no ties); or, as an option, the selected judge."""

from __future__ import annotations

import random
from collections.abc import Sequence

import dspy
import numpy as np

from prefcraft.components.sensejudge.results import RankingOutcome
from prefcraft.components.sensejudge.votes import judgments
from prefcraft.loaders.personal_reward_bench import PreferencePair, pair_id
from prefcraft.metrics.majority_vote import UnparseableVote, decode_vote, majority_decisions
from prefcraft.metrics.pairwise import Judgment
from prefcraft.metrics.ranking import Comparison, bradley_terry, rank_correlation, ranking_scores, win_rates


def draw_descriptions(descriptions: Sequence[str], count: int, seed: int, topic: str) -> list[int]:
    """The positions of `count` of a topic's written descriptions (the empty one is no preference), drawn at random,
    the same for a seed and topic whatever the other topics; all of them when there are no more than `count`."""
    written = [index for index, description in enumerate(descriptions) if description.strip()]
    if len(written) <= count:
        return written
    return sorted(random.Random(f"{seed}/{topic}").sample(written, count))


def rank_by_random_descriptions(
    test: Sequence[PreferencePair], examples: dict[str, list[dspy.Example]], votes: dict[str, np.ndarray],
    selections: dict[str, dict], models: dict[str, tuple[str, str]], count: int, given: Sequence[str] | None,
    seed: int, rule: UnparseableVote,
) -> RankingOutcome:
    """The paper's ranking judge: per topic, the majority vote of `count` descriptions drawn at random, on the votes
    every description already cast; the models ranked against the `given` ranking, if any."""
    judged, drawn = [], {}
    for topic, topic_votes in votes.items():
        positions = draw_descriptions(selections[topic]["candidate_descriptions"], count, seed, topic)
        subset = np.zeros((1, len(topic_votes)), dtype=np.int8)
        subset[0, positions] = 1
        decisions = majority_decisions(topic_votes, subset, rule)[0]
        judged += judgments(examples[topic], [decode_vote(decision) for decision in decisions])
        drawn[topic] = [selections[topic]["description_names"][position] for position in positions]
    fewer = [f"{topic} {len(names)}" for topic, names in drawn.items() if len(names) < count]
    judge = f"{count} random descriptions per topic, majority vote"
    if fewer:
        judge += f"; all of them where a topic has fewer ({', '.join(fewer)})"
    return rank(test, judged, models, given, judge, drawn)


def rank(
    test: Sequence[PreferencePair], judged: Sequence[Judgment], models: dict[str, tuple[str, str]],
    given: Sequence[str] | None, judge: str, drawn: dict[str, list[str]] | None = None,
) -> RankingOutcome:
    """The judge's comparisons (each test pair in both orders) and the annotator's (its label) ranked and compared."""
    compared = []
    for judgment in judged:
        chosen, rejected = models[judgment.pair_id]
        first, second = (chosen, rejected) if judgment.order == "chosen_first" else (rejected, chosen)
        winner = {"First": first, "Second": second}.get(judgment.predicted or "")
        compared.append(Comparison(first, second, winner))
    labelled = [Comparison(chosen, rejected, chosen) for chosen, rejected in (models[pair_id(pair)] for pair in test)]
    reference = ranking_scores(given) if given else win_rates(labelled)
    wins, strengths = win_rates(compared), bradley_terry(compared)
    return RankingOutcome(judge=judge, drawn=drawn or {}, judge_wins=wins, judge_bradley_terry=strengths,
                          reference=reference, reference_source="given" if given else "annotator's wins",
                          by_wins=rank_correlation(wins, reference),
                          by_bradley_terry=rank_correlation(strengths, reference))
