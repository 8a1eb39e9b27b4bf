"""Judging preference pairs in both orders with dspy.Evaluate, and turning the results into Judgments."""

from __future__ import annotations

from collections.abc import Sequence

import dspy

from prefcraft.lm import check_reachable
from prefcraft.loaders.personal_reward_bench import PreferencePair, judge_set
from prefcraft.metrics.pairwise import Judgment, preference_correct
from prefcraft.settings import ModelSettings
from prefcraft.usage import LMUsage, metered


def judge_pairs(
    program: dspy.Module,
    pairs: Sequence[PreferencePair],
    *,
    model: ModelSettings,
    num_threads: int,
    progress: bool = True,
) -> tuple[list[Judgment], LMUsage]:
    """Every pair judged in both orders. An example whose call failed counts as wrong (predicted None).

    If any call failed and the server no longer answers, raises ServerUnreachableError instead of reporting zeros.
    The first example runs alone before the others: every call shares the judge's prompt prefix, and calls that
    start together with a prefix the server has not cached yet each evaluate it in full. Evaluate then takes that
    first answer from DSPy's cache.
    """
    examples = judge_set(pairs)
    if not examples:
        return [], LMUsage()
    evaluate = dspy.Evaluate(
        devset=examples,
        metric=preference_correct,
        num_threads=num_threads,
        display_progress=progress,
        max_errors=len(examples) + 1,  # a parse failure is a wrong answer, not a reason to stop
        failure_score=0.0,
        provide_traceback=False,
    )
    with metered() as meter:
        if num_threads > 1:
            _warm_prefix(program, examples[0])
        result = evaluate(program)
    judgments = [
        Judgment(
            user_id=example.user_id,
            pair_id=example.pair_id,
            order=example.order,
            predicted=getattr(prediction, "preference", None),
            correct=bool(score),
        )
        for example, prediction, score in result.results
    ]
    if any(judgment.predicted is None for judgment in judgments):
        check_reachable(model)
    return judgments, meter.usage


def _warm_prefix(program: dspy.Module, example: dspy.Example) -> None:
    try:
        program(**example.inputs())
    except Exception:
        pass  # Evaluate makes the same call next, and counts its failure
