"""Pick the best of several candidate programs on a small validation set.

The paper's rule (SynthesizeMe and its reference code): candidates are taken in order; the first to reach `stop_at`
on the validation set wins, else the most accurate (the earliest of the tied). Three strategies:

`exact` (the default): the paper's winner, always the candidate `exhaustive` picks, with the calls that cannot change
the choice left out. A candidate can still win while it can still reach `stop_at` and no earlier candidate is sure to
(its correct answers so far already make `stop_at` of the set), or, when it can no longer reach it, while no candidate
is sure to and its best possible score still beats every earlier candidate's score so far and at least ties every
later one's (ties go to the earlier one). Each result updates these bounds; a candidate that can no longer win is
scored no further ("cannot win", or "not needed" when an earlier candidate is sure to reach `stop_at`), and the search
is decided when one candidate is left. That one is then scored to the end, so its accuracy is known. Up to
`num_threads` calls are in flight, each sent as soon as the results so far say it is needed, to the earliest
candidate that can still win (see `ExactRace`): a candidate's first call runs alone (its prompt prefix is new to the
server), and later candidates fill the threads while it runs.

`exhaustive`: every candidate on every example (the record holds every candidate's full score), then the same rule.

`halving` (successive halving, as in Hyperband), to spend fewer LM calls by guessing: every candidate is scored on the
first rung of examples, the best third go on to a rung twice as long (ties broken by a seeded random order: with
two-way outputs ties are the rule, and keeping the earlier candidates would favour the start of the list whatever
they are), and so on until the survivors have seen every example; the winner is the most accurate fully scored
survivor. A candidate whose score so far already guarantees `stop_at` ends the search: it alone is scored to the end.
Candidates that a short rung drops ("dropped") are never scored in full, so the winner can differ from the paper's;
the fit-cost benchmark measures by how much.

`exhaustive` and `halving` run each rung's (candidate, example) calls in one thread pool, in the order
`prefcraft.engine.scheduling` gives: a candidate is its own prompt prefix (instructions and demos), so on the first rung
each candidate's first call runs before the rest, and calls in flight together belong to different candidates. A failed
call scores 0 and is counted in `failed`. The metric scores an example between 0 and 1.
"""

from __future__ import annotations

import contextvars
import logging
import math
import random
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Literal

import dspy

from prefcraft.engine.scheduling import interleave, run_phases, warm_then_interleave

logger = logging.getLogger(__name__)

Metric = Callable[[dspy.Example, dspy.Prediction], float]
SearchStrategy = Literal["exact", "exhaustive", "halving"]
StopReason = Literal["complete", "cannot win", "not needed", "dropped"]
"""Why a candidate was scored no further: every example judged; it could no longer win (`exact`); an earlier
candidate was sure to reach `stop_at` (`exact`); a halving rung dropped it (`halving`: it might have won)."""
KEEP_FRACTION = 1 / 3


@dataclass
class CandidateScore:
    index: int
    correct: float
    judged: int
    total: int
    failed: int = 0
    tie_break: float = 0.0
    stopped: StopReason = "complete"

    @property
    def complete(self) -> bool:
        return self.judged == self.total

    @property
    def accuracy(self) -> float:
        """Correct answers over every example: a lower bound while the candidate is partial (`complete` is False)."""
        return self.correct / self.total if self.total else 0.0

    @property
    def most(self) -> float:
        """The most correct answers it can end with: every example not judged yet right."""
        return self.correct + self.total - self.judged

    def guarantees(self, stop_at: float | None) -> bool:
        """Whether the score so far reaches `stop_at` whatever the unjudged examples give."""
        return _reaches(self.correct, self.total, stop_at)

    def can_reach(self, stop_at: float | None) -> bool:
        """Whether the unjudged examples can still take it to `stop_at`."""
        return _reaches(self.most, self.total, stop_at)

    def as_record(self) -> dict[str, object]:
        """How far it was scored and why it stopped, for a fit's record."""
        return {"correct": self.correct, "judged": self.judged, "total": self.total, "failed": self.failed,
                "stopped": self.stopped}


def _reaches(correct: float, total: int, stop_at: float | None) -> bool:
    return stop_at is not None and total > 0 and correct / total >= stop_at


@dataclass
class SearchResult:
    best_index: int
    scores: list[CandidateScore] = field(default_factory=list)

    @property
    def best(self) -> CandidateScore:
        return self.scores[self.best_index]

    @property
    def judged(self) -> int:
        """Calls made: one per (candidate, example) judged."""
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
    strategy: SearchStrategy = "exact",
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
    if strategy == "exact":
        best = _race(candidates, scores, examples, metric, stop_at, max(num_threads, 1))
        return SearchResult(best_index=best, scores=scores)
    if strategy == "exhaustive":
        _score_rung(candidates, scores, examples, 0, len(examples), metric, num_threads)
        return SearchResult(best_index=paper_winner(scores, stop_at), scores=scores)

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
    for score in scores:
        if not score.complete:
            score.stopped = "dropped"
    return SearchResult(best_index=_most_accurate(alive).index, scores=scores)


def paper_winner(scores: Sequence[CandidateScore], stop_at: float | None) -> int:
    """The paper's rule on complete scores: the first candidate reaching `stop_at`, else the most accurate, the
    earliest of the tied."""
    reaching = [score for score in scores if score.guarantees(stop_at)]
    best = reaching[0] if reaching else min(scores, key=lambda score: (-score.correct, score.index))
    return best.index


def out_of_the_running(scores: Sequence[CandidateScore], stop_at: float | None) -> dict[int, StopReason]:
    """The candidates that can no longer be the paper's winner, whatever their unjudged examples give, and why.

    A candidate that can still reach `stop_at` wins when it does and every earlier one does not: it is out only when
    an earlier candidate is sure to reach it ("not needed"). One that cannot reach it wins only if no candidate does
    and it is the most accurate: it is out when some candidate is sure to reach `stop_at`, or when another one's score
    so far beats its best possible score (or, for an earlier one, equals it: ties go to the earlier); "cannot win".
    Exact: a candidate not listed wins if its unjudged examples are all right and every other's all wrong.
    """
    first_sure = _first_sure(scores, stop_at)
    return {score.index: reason for score in scores
            if (reason := _why_out(score, score.most, scores, stop_at, first_sure)) is not None}


def _first_sure(scores: Sequence[CandidateScore], stop_at: float | None) -> int | None:
    return next((score.index for score in scores if score.guarantees(stop_at)), None)


def _why_out(
    score: CandidateScore, most: float, scores: Sequence[CandidateScore], stop_at: float | None, first_sure: int | None
) -> StopReason | None:
    """Why `score`'s candidate cannot win if it ends with at most `most` correct; None if it still can."""
    if first_sure is not None and score.index > first_sure:
        return "not needed"
    if _reaches(most, score.total, stop_at):
        return None
    if first_sure is not None or any(other.correct > most or (other.index < score.index and other.correct >= most)
                                     for other in scores if other is not score):
        return "cannot win"
    return None


@dataclass
class ExactRace:
    """`exact`'s state: which candidates can still win, and which call goes out next.

    A call goes out only where the scores so far say it is needed: to the earliest candidate still running whose
    calls in flight are fewer than the results that, all wrong, would rule it out. A thread waits rather than take a
    call that these results could make useless; once one candidate is left, its remaining calls go out together. A
    candidate's first call runs alone, as its prompt prefix is new to the server.

    A candidate that cannot win shows it soonest on the examples it gets wrong, so each is asked first the example it
    is least likely to get right as the other candidates' results predict it (`_predicted`).
    """

    scores: Sequence[CandidateScore]
    stop_at: float | None
    out: dict[int, StopReason] = field(default_factory=dict)
    unsent: list[list[int]] = field(default_factory=list)
    in_flight: list[int] = field(default_factory=list)
    results: list[dict[int, float]] = field(default_factory=list)
    """Per candidate, the score of each example judged (0 for a failed call)."""

    def __post_init__(self) -> None:
        self.unsent = [list(range(score.total)) for score in self.scores]
        self.in_flight = [0] * len(self.scores)
        self.results = [{} for _ in self.scores]
        self.update()

    @property
    def running(self) -> list[CandidateScore]:
        return [score for score in self.scores if score.index not in self.out]

    def update(self) -> None:
        """Candidates once out stay out: the bounds only narrow."""
        for index, reason in out_of_the_running(self.scores, self.stop_at).items():
            self.out.setdefault(index, reason)

    def next_call(self) -> tuple[CandidateScore, int] | None:
        running = self.running
        for score in running:
            warming = score.judged == 0 and self.in_flight[score.index] > 0
            if self.unsent[score.index] and not warming and (
                    len(running) == 1 or self.in_flight[score.index] < self._results_to_rule_out(score)):
                unsent = self.unsent[score.index]
                predicted = self._predicted(score.index)
                example = min(unsent, key=lambda e: (predicted[e], e))
                unsent.remove(example)
                self.in_flight[score.index] += 1
                return score, example
        return None

    def _predicted(self, index: int) -> list[float]:
        """Per example, how likely candidate `index` is to get it right, from the others' results: each other
        candidate's result counts towards the same result in the measure they agreed on the examples both judged, and
        towards the opposite in the measure they disagreed (a judge biased towards the first position is wrong where
        one biased towards the second is right); with nothing in common, two to one for the same. A prior of 1/2
        counts as one result."""
        mine = self.results[index]
        total = self.scores[index].total
        votes, counts = [0.5] * total, [1] * total
        for other, theirs in enumerate(self.results):
            if other == index or not theirs:
                continue
            common = [e for e in mine if e in theirs]
            same = (sum(1 - abs(mine[e] - theirs[e]) for e in common) + 2) / (len(common) + 3)
            for example, value in theirs.items():
                votes[example] += same * value + (1 - same) * (1 - value)
                counts[example] += 1
        return [vote / count for vote, count in zip(votes, counts, strict=True)]

    def _results_to_rule_out(self, score: CandidateScore) -> int:
        """The fewest further results (all wrong) after which `score`'s candidate would be out, the others' scores as
        they are; its examples left when none would."""
        left = score.total - score.judged
        first_sure = _first_sure(self.scores, self.stop_at)
        return next((wrong for wrong in range(1, left + 1)
                     if _why_out(score, score.most - wrong, self.scores, self.stop_at, first_sure)), left)

    def record(self, score: CandidateScore, example: int, value: float | None) -> None:
        """One call's result: None for a failed call, which scores 0."""
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"the exact search needs a metric between 0 and 1, got {value}; use 'exhaustive'")
        self.in_flight[score.index] -= 1
        score.judged += 1
        score.failed += value is None
        score.correct += value or 0.0
        self.results[score.index][example] = value or 0.0
        self.update()

    def winner(self) -> int:
        (winner,) = self.running  # out_of_the_running never rules out every candidate: one always wins
        for score in self.scores:
            if not score.complete:
                score.stopped = self.out[score.index]
        return winner.index


def _race(
    candidates: Sequence[dspy.Module], scores: Sequence[CandidateScore], examples: Sequence[dspy.Example],
    metric: Metric, stop_at: float | None, num_threads: int,
) -> int:
    """`exact`: calls sent as threads free up, each result narrowing the race, until one candidate is left and has
    judged every example; calls already sent are waited for and counted."""
    race = ExactRace(scores, stop_at)
    pool = ThreadPoolExecutor(max_workers=num_threads)
    sent: dict[Future, tuple[CandidateScore, int]] = {}
    try:
        while True:
            while len(sent) < num_threads and (call := race.next_call()) is not None:
                score, example = call
                # Each call runs in a copy of this thread's context: DSPy's settings (LM, adapter, usage tracker).
                context = contextvars.copy_context()
                sent[pool.submit(context.run, _predict, candidates[score.index], examples[example])] = call
            if not sent:
                break
            done, _ = wait(sent, return_when=FIRST_COMPLETED)
            for future in done:
                score, example = sent.pop(future)
                prediction = future.result()
                race.record(score, example,
                            None if prediction is None else float(metric(examples[example], prediction)))
    finally:
        pool.shutdown(wait=not sent, cancel_futures=True)
    return race.winner()


def _predict(candidate: dspy.Module, example: dspy.Example) -> dspy.Prediction | None:
    try:
        return candidate(**example.inputs())
    except Exception as error:  # a failed call is a known result: it scores 0
        logger.warning("a candidate's call failed (scored 0): %s", error)
        return None


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
