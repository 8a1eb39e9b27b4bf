"""Fixtures for the commands' tests."""

from contextlib import nullcontext

import pytest

from prefcraft.components.synthesizeme import evaluation as evaluate
from prefcraft.loaders.personal_reward_bench import pair_id
from prefcraft.metrics.pairwise import Judgment
from prefcraft.usage import LMUsage


@pytest.fixture
def offline(monkeypatch):
    """`evaluate` with no server, no MLflow and no model calls: every judged pair counts as right. Yields each user's
    judge instructions, in the order they were judged."""
    instructions: dict[str, list[str]] = {}

    def judge_pairs(judge, pairs, **options):
        instructions.setdefault(pairs[0].user_id, []).append(judge.judge.predict.signature.instructions)
        return [Judgment(p.user_id, pair_id(p), "chosen_first", "First", True) for p in pairs], LMUsage()

    monkeypatch.setattr(evaluate, "model_session", nullcontext)
    monkeypatch.setattr(evaluate, "lm_context", lambda *args: nullcontext())
    monkeypatch.setattr(evaluate, "tracked_run", lambda *args, **kwargs: nullcontext())
    for name in ("start_tracking", "log_metrics", "log_json"):
        monkeypatch.setattr(evaluate, name, lambda *args: None)
    monkeypatch.setattr(evaluate, "judge_pairs", judge_pairs)
    return instructions
