"""Pick the best of several candidate programs on a small validation set, spending as few LM calls as possible.

`halving` (successive halving, as in Hyperband): every candidate is scored on the first rung of examples, the best
third (ties keep the earlier candidate) go on to a rung twice as long, and so on until the survivors have seen every
example; the winner is the most accurate fully scored survivor. A candidate whose score so far already guarantees
`stop_at` ends the search: it alone is scored to the end. Candidates that a short rung eliminates are never scored
in full, so the winner can differ from the exhaustive one; the fit-cost benchmark measures by how much.

`exhaustive` (SynthesizeMe's reference code): every candidate on every example; the first candidate in order reaching
`stop_at` wins, else the most accurate.

Each rung runs all its (candidate, example) calls in one thread pool, so a small validation set still keeps
`num_threads` calls in flight.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import dspy

Metric = Callable[[dspy.Example, dspy.Prediction], float]
SearchStrategy = Literal["halving", "exhaustive"]
KEEP_FRACTION = 1 / 3


@dataclass
class CandidateScore:
    index: int
    correct: float
    judged: int
    total: int

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


def search_candidates(
    candidates: Sequence[dspy.Module],
    examples: Sequence[dspy.Example],
    metric: Metric,
    *,
    stop_at: float | None,
    num_threads: int,
    strategy: SearchStrategy = "halving",
    first_rung: int = 1,
) -> SearchResult:
    """Score `candidates` on `examples`; the first halving rung is `first_rung` examples long."""
    if not candidates:
        raise ValueError("search_candidates needs at least one candidate")
    scores = [CandidateScore(index=i, correct=0.0, judged=0, total=len(examples)) for i in range(len(candidates))]
    if strategy == "exhaustive":
        _score_rung(candidates, scores, examples, 0, len(examples), metric, num_threads)
        reaching = [score for score in scores if score.guarantees(stop_at)]
        return SearchResult(best_index=(reaching or [_most_accurate(scores)])[0].index, scores=scores)

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


def _rank(score: CandidateScore) -> tuple[float, int]:
    """More correct first; on ties, the earlier candidate."""
    return -score.correct, score.index


def _most_accurate(scores: Sequence[CandidateScore]) -> CandidateScore:
    return min(scores, key=_rank)


def _score_rung(
    candidates: Sequence[dspy.Module], scores: Sequence[CandidateScore], examples: Sequence[dspy.Example],
    start: int, end: int, metric: Metric, num_threads: int,
) -> None:
    """Score each of `scores`' candidates on examples[start:end], all calls in one pool; a failed call scores 0."""
    jobs = [(score, examples[i]) for score in scores for i in range(start, end)]
    parallel = dspy.Parallel(num_threads=num_threads, max_errors=len(jobs) + 1, disable_progress_bar=True)
    predictions = parallel([(candidates[score.index], example) for score, example in jobs])
    for (score, example), prediction in zip(jobs, predictions, strict=True):
        if prediction is not None:
            score.correct += float(metric(example, prediction))
    for score in scores:
        score.judged += end - start
