"""Pick the best of several candidate programs on a small validation set, spending as few LM calls as possible.

Candidates are scored in order, in parallel batches. A candidate is abandoned as soon as it can no longer beat the
best one so far (its remaining examples could not lift it above the leader, and ties keep the earlier candidate), and
the search stops at the first candidate that reaches `stop_at`. Both rules return the same winner as scoring every
candidate on every example would, except that `stop_at` may stop at a good-enough candidate before a better one,
as SynthesizeMe's reference code does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import dspy

Metric = Callable[[dspy.Example, dspy.Prediction], float]


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


@dataclass
class SearchResult:
    best_index: int
    scores: list[CandidateScore] = field(default_factory=list)

    @property
    def best(self) -> CandidateScore:
        return next(score for score in self.scores if score.index == self.best_index)


def search_candidates(
    candidates: Sequence[dspy.Module],
    examples: Sequence[dspy.Example],
    metric: Metric,
    *,
    stop_at: float | None,
    num_threads: int,
    prune: bool = True,
) -> SearchResult:
    """Score `candidates` on `examples`; `prune=False` scores every candidate on every example (for comparison)."""
    if not candidates:
        raise ValueError("search_candidates needs at least one candidate")
    result = SearchResult(best_index=0)
    best_correct = -1.0
    for index, program in enumerate(candidates):
        score = _score(index, program, examples, metric, num_threads, must_beat=best_correct if prune else -1.0)
        result.scores.append(score)
        if score.complete and score.correct > best_correct:
            best_correct, result.best_index = score.correct, index
        if stop_at is not None and examples and best_correct / len(examples) >= stop_at:
            break
    return result


def _score(
    index: int,
    program: dspy.Module, examples: Sequence[dspy.Example], metric: Metric, num_threads: int, must_beat: float
) -> CandidateScore:
    score = CandidateScore(index=index, correct=0.0, judged=0, total=len(examples))
    batch_size = max(2 * num_threads, 1)
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        predictions = program.batch(
            list(batch), num_threads=num_threads, max_errors=len(batch) + 1, disable_progress_bar=True
        )
        score.correct += sum(
            float(metric(example, prediction)) for example, prediction in zip(batch, predictions, strict=True)
            if prediction is not None
        )
        score.judged += len(batch)
        if score.correct + (score.total - score.judged) <= must_beat:
            break
    return score
