"""A user's judge put to use: the best of n candidate responses for that user, and a reward function in the shape
TRL's GRPO trainer takes. Every comparison is judged in both orders (a judge's position bias cancels out); an order
whose call fails or names neither response counts for neither.

Two tournaments pick the best: a round robin judges every pair (n(n-1) calls; the most orders won wins, the earliest
on a tie), the default since it sees every comparison; a knockout keeps a champion that each next candidate challenges
(2(n-1) calls; the champion stays on a tie).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prefcraft.errors import ServerError

logger = logging.getLogger(__name__)

Prefers = Callable[[Any, str, str], str]
"""(conversation: one user message or the messages so far, first response, second response) -> "First" or "Second":
`PersonalJudge.prefers`."""
Tournament = Literal["round_robin", "knockout"]
TOURNAMENTS: tuple[Tournament, ...] = ("round_robin", "knockout")


@dataclass(frozen=True)
class Choice:
    """The chosen candidate (`best`, an index), the orders each candidate won, the judge calls made and how many of
    them gave no preference."""

    best: int
    wins: list[int]
    calls: int
    failed: int


@dataclass
class _Tally:
    wins: list[int]
    calls: int = 0
    failed: int = 0

    def match(self, prefers: Prefers, conversation: Any, candidates: Sequence[str], a: int, b: int) -> int:
        """Judge candidates a and b in both orders; returns a's orders won minus b's."""
        won = {a: 0, b: 0}
        for first, second in ((a, b), (b, a)):
            self.calls += 1
            verdict = _verdict(prefers, conversation, candidates[first], candidates[second])
            if verdict is None:
                self.failed += 1
            else:
                won[first if verdict == "First" else second] += 1
        self.wins[a] += won[a]
        self.wins[b] += won[b]
        return won[a] - won[b]


def best_of_n(prefers: Prefers, conversation: Any, candidates: Sequence[str],
              tournament: Tournament = "round_robin") -> Choice:
    """The candidate response the judge's user is predicted to prefer. `conversation`: one user message or the
    messages so far (`{"role", "content"}`)."""
    if tournament not in TOURNAMENTS:
        raise ValueError(f"unknown tournament {tournament!r}: choose one of {', '.join(TOURNAMENTS)}")
    if not candidates:
        raise ValueError("best_of_n needs at least one candidate response")
    tally = _Tally([0] * len(candidates))
    if tournament == "knockout":
        best = 0
        for challenger in range(1, len(candidates)):
            if tally.match(prefers, conversation, candidates, best, challenger) < 0:
                best = challenger
    else:
        for a, b in itertools.combinations(range(len(candidates)), 2):
            tally.match(prefers, conversation, candidates, a, b)
        best = max(range(len(candidates)), key=lambda index: (tally.wins[index], -index))
    return Choice(best, tally.wins, tally.calls, tally.failed)


def reward_function(prefers: Prefers, reference_column: str = "reference") -> Callable[..., list[float]]:
    """A reward function for TRL's `GRPOTrainer` (`reward_funcs=`): each completion scored by the judge against the
    dataset's reference completion for its prompt (column `reference_column`), in both orders: 1.0 when preferred in
    both, 0.5 in one, 0.0 in none. Prompts and completions may be text or conversations, as TRL passes them."""

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        if reference_column not in columns:
            raise ValueError(f"the reward needs the dataset column '{reference_column}' (a reference completion "
                             f"per prompt); the trainer passed {', '.join(sorted(columns)) or 'none'}")
        scores = []
        for prompt, completion, reference in zip(prompts, completions, columns[reference_column], strict=True):
            tally = _Tally([0, 0])
            tally.match(prefers, prompt, [_text(completion), _text(reference)], 0, 1)
            scores.append(tally.wins[0] / 2)
        return scores

    reward.__name__ = "personal_judge_reward"  # TRL logs each reward under its function's name
    return reward


def _verdict(prefers: Prefers, conversation: Any, first: str, second: str) -> str | None:
    try:
        verdict = prefers(conversation, first, second)
    except ServerError:
        raise
    except Exception as error:  # a failed or unparseable call: no preference in this order, counted
        logger.warning("the judge gave no preference (%s)", error)
        return None
    return verdict if verdict in ("First", "Second") else None


def _text(completion: Any) -> str:
    """A completion as TRL gives it: text, or the assistant's messages (the last one's content)."""
    if isinstance(completion, str):
        return completion
    last = completion[-1]
    return str(last["content"] if isinstance(last, Mapping) else last)
