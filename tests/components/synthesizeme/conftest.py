"""Fixtures for the commands' tests."""

from contextlib import nullcontext

import pytest

from prefcraft import runner
from prefcraft.components.synthesizeme import evaluation as evaluate
from prefcraft.engine.usage import LMUsage
from prefcraft.loaders.personal_reward_bench import pair_id
from prefcraft.metrics.pairwise import Judgment
from prefcraft.programs.judge import ProfileJudge


@pytest.fixture
def tracker(fake_runner):
    return fake_runner


@pytest.fixture
def no_models(monkeypatch):
    """A runner that fails the test if it starts a model session."""

    def model_session(settings):
        raise AssertionError("a model session was started")

    monkeypatch.setattr(runner, "model_session", model_session)


@pytest.fixture
def offline(monkeypatch, tracker):
    """`evaluate` with no server, no MLflow and no model calls: every judged pair counts as right. Yields each user's
    judge instructions (a `ProfileJudge`'s profile), in the order they were judged."""
    instructions: dict[str, list[str]] = {}

    def judge_pairs(judge, pairs, **options):
        told = judge.profile if isinstance(judge, ProfileJudge) else judge.judge.predict.signature.instructions
        instructions.setdefault(pairs[0].user_id, []).append(told)
        return [Judgment(p.user_id, pair_id(p), "chosen_first", "First", True) for p in pairs], LMUsage()

    monkeypatch.setattr(evaluate, "lm_context", lambda *args: nullcontext())
    monkeypatch.setattr(evaluate, "judge_pairs", judge_pairs)
    return instructions
