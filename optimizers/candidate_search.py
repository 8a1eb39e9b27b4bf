"""Pick the best of several candidate programs on a small validation set.

`exhaustive` (the default; SynthesizeMe's paper and reference code): every candidate on every example; the first
candidate in order reaching `stop_at` wins, else the most accurate (the earliest of the tied).

`halving` (successive halving, as in Hyperband), to spend fewer LM calls: every candidate is scored on the first rung
of examples, the best third go on to a rung twice as long (ties broken by a seeded random order: with two-way outputs
ties are the rule, and keeping the earlier candidates would favour the start of the list whatever they are), and so on
until the survivors have seen every example; the winner is the most accurate fully scored survivor. A candidate whose
score so far already guarantees `stop_at` ends the search: it alone is scored to the end. Candidates that a short rung
eliminates are never scored in full, so the winner can differ from the exhaustive one; the fit-cost benchmark
measures by how much.

Each rung runs all its (candidate, example) calls in one thread pool, so a small validation set still keeps
`num_threads` calls in flight, in the order `prefcraft.scheduling` gives: a candidate is its own prompt prefix
(instructions and demos), so on the first rung each candidate's first call runs before the rest, and calls in
flight together belong to different candidates. A failed call scores 0 and is counted in `failed`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import dspy

from prefcraft.scheduling import interleave, run_phases, warm_then_interleave

Metric = Callable[[dspy.Example, dspy.Prediction], float]
SearchStrategy = Literal["exhaustive", "halving"]
KEEP_FRACTION = 1 / 3


@dataclass
class CandidateScore:
    index: int
    correct: float
    judged: int
    total: int
    failed: int = 0
    tie_break: float = 0.0

    @property
    def complete(self) -> bool:
        return self.judged == self.total

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def guarantees(self, stop_at: float | None) -> bool:
        """Whether the score so far reaches `stop_at` whatever the unjudged examples give."""
        return stop_at is not None and self.total > 0 and self.accuracy >= stop_at


@dataclass
class SearchResult:
    best_index: int
    scores: list[CandidateScore] = field(default_factory=list)

    @property
    def best(self) -> CandidateScore:
        return self.scores[self.best_index]

    @property
    def judged(self) -> int:
        return sum(score.judged for score in self.scores)

    @property
    def failed(self) -> int:
        return sum(score.failed for score in self.scores)


def search_candidates(
    candidates: Sequence[dspy.Module],
    examples: Sequence[dspy.Example],
    metric: Metric,
    *,
    stop_at: float | None,
    num_threads: int,
    strategy: SearchStrategy = "exhaustive",
    first_rung: int = 1,
    seed: int = 0,
) -> SearchResult:
    """Score `candidates` on `examples`; the first halving rung is `first_rung` examples long."""
    if not candidates:
        raise ValueError("search_candidates needs at least one candidate")
    rng = random.Random(seed)
    scores = [
        CandidateScore(index=i, correct=0.0, judged=0, total=len(examples), tie_break=rng.random())
        for i in range(len(candidates))
    ]
    if strategy == "exhaustive":
        _score_rung(candidates, scores, examples, 0, len(examples), metric, num_threads)
        reaching = [score for score in scores if score.guarantees(stop_at)]
        best = reaching[0] if reaching else min(scores, key=lambda score: (-score.correct, score.index))
        return SearchResult(best_index=best.index, scores=scores)

    alive = list(scores)
    start, rung = 0, max(first_rung, 1)
    while start < len(examples):
        end = min(start + rung, len(examples))
        _score_rung(candidates, alive, examples, start, end, metric, num_threads)
        start, rung = end, 2 * rung
        reaching = [score for score in alive if score.guarantees(stop_at)]
        if reaching:
            alive = reaching[:1]
        elif start < len(examples):
            ranked = sorted(alive, key=_rank)
            alive = sorted(ranked[: max(1, math.ceil(len(alive) * KEEP_FRACTION))], key=lambda score: score.index)
    return SearchResult(best_index=_most_accurate(alive).index, scores=scores)


def _rank(score: CandidateScore) -> tuple[float, float]:
    """More correct first; on ties, the seeded random order."""
    return -score.correct, score.tie_break


def _most_accurate(scores: Sequence[CandidateScore]) -> CandidateScore:
    return min(scores, key=_rank)


def _score_rung(
    candidates: Sequence[dspy.Module], scores: Sequence[CandidateScore], examples: Sequence[dspy.Example],
    start: int, end: int, metric: Metric, num_threads: int,
) -> None:
    """Score each of `scores`' candidates on examples[start:end]; a failed call scores 0 and is counted."""
    groups = [[(score, examples[i]) for i in range(start, end)] for score in scores]
    # A candidate's prefix is new to the server on the first rung only.
    phases = warm_then_interleave(groups) if start == 0 else [interleave(groups)]
    predictions = run_phases([[(candidates[score.index], example) for score, example in phase] for phase in phases],
                             num_threads)
    jobs = [job for phase in phases for job in phase]
    for (score, example), prediction in zip(jobs, predictions, strict=True):
        if prediction is None:
            score.failed += 1
        else:
            score.correct += float(metric(example, prediction))
    for score in scores:
        score.judged += end - start
