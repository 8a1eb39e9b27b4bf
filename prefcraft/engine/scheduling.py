"""Call order for servers that cache prompt prefixes (llama.cpp's slots and host cache, vLLM's prefix cache).

Calls that share a prefix (a candidate's persona and demos, a judge's instructions) are a group. Two rules:
- a group's prefix is sent once, alone, before its other calls run side by side: calls that start together with the
  same new prefix each evaluate it in full, because none of them has finished caching it;
- calls in flight together belong to different groups (round-robin), so each server slot keeps one prefix.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TypeVar

import dspy

T = TypeVar("T")
_GAP = object()


def interleave(groups: Sequence[Sequence[T]]) -> list[T]:
    """One item of each group in turn."""
    rounds = itertools.zip_longest(*groups, fillvalue=_GAP)
    return [item for round_ in rounds for item in round_ if item is not _GAP]


def warm_then_interleave(groups: Sequence[Sequence[T]]) -> list[list[T]]:
    """Two phases, run one after the other: the first item of every group, then the rest interleaved."""
    firsts = [group[0] for group in groups if group]
    rest = interleave([group[1:] for group in groups])
    return [phase for phase in (firsts, rest) if phase]


def run_phases(
    phases: Sequence[Sequence[tuple[dspy.Module, dspy.Example]]], num_threads: int
) -> list[dspy.Prediction | None]:
    """Run (program, example) calls phase after phase, each phase in one thread pool; a failed call gives None."""
    predictions: list[dspy.Prediction | None] = []
    for phase in phases:
        parallel = dspy.Parallel(num_threads=num_threads, max_errors=len(phase) + 1, disable_progress_bar=True)
        predictions.extend(parallel(list(phase)))
    return predictions
