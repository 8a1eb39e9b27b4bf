"""Shared fixtures: isolated DSPy settings and cache per test, and one real embedded model server per session."""

from __future__ import annotations

import copy
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import nullcontext

# Before dspy is imported anywhere: keep the suite's cache out of the user's home and litellm offline.
os.environ.setdefault("DSPY_CACHEDIR", tempfile.mkdtemp(prefix="prefcraft-test-cache-"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy
import pytest
from dspy.dsp.utils.settings import DEFAULT_CONFIG

from prefcraft.backends import ManagedServer, managed_server
from prefcraft.executors import keep_local_ray_on_loopback
from prefcraft.loaders.personal_reward_bench import PreferencePair, UserPairs
from prefcraft.settings import ModelSettings, ServerSettings

keep_local_ray_on_loopback()  # before any test module imports ray


@pytest.fixture(autouse=True)
def reset_dspy_settings() -> Iterator[None]:
    original_cache = dspy.cache
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=None)
    try:
        yield
    finally:
        dspy.configure(**copy.deepcopy(DEFAULT_CONFIG))
        dspy.cache = original_cache


@pytest.fixture(autouse=True)
def no_mlflow_run_left_active() -> Iterator[None]:
    """A run left active would adopt every later test's runs as its children: end it, and fail the test that left it."""
    yield
    mlflow = sys.modules.get("mlflow")
    if mlflow is not None and mlflow.active_run() is not None:
        leaked = mlflow.active_run().info.run_name
        while mlflow.active_run() is not None:
            mlflow.end_run()
        pytest.fail(f"the test left the MLflow run {leaked!r} active")


@pytest.fixture(scope="session")
def embedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedServer]:
    """The real llama.cpp server with the bundled SmolLM2-135M-Instruct, started once for the whole session."""
    settings = ServerSettings(log_dir=tmp_path_factory.mktemp("server-logs"), n_threads=2)
    with managed_server(settings) as server:
        yield server


@pytest.fixture(scope="session")
def two_ray_workers() -> Iterator[None]:
    """A local Ray runtime of two CPUs on loopback, so two tasks run at once (the Ray tests skip without the
    distributed extra)."""
    ray = pytest.importorskip("ray", reason="the distributed extra is not installed")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def embedded_model(embedded_server: ManagedServer) -> ModelSettings:
    """Settings for the embedded server: temperature 0, bounded tokens, a timeout that only catches hangs."""
    return ModelSettings(api_base=embedded_server.base_url, max_tokens=256, timeout_s=300)


# Small, learnable users: with short_wins the user prefers the short answer, otherwise the long one.
TOPICS = ["boil an egg", "save money", "sleep better", "learn Spanish", "water a cactus", "start running",
          "write a polite email", "cook rice"]


def _pair(index: int, split: str, short_wins: bool = True, user_id: str = "u1") -> PreferencePair:
    topic = TOPICS[index % len(TOPICS)]
    short = f"To {topic}: keep it simple and start today."
    long = (f"To {topic}, first learn the basics, then practise a little every day, track what works, and adjust "
            "your routine every week until it becomes a habit you no longer think about.")
    chosen, rejected = (short, long) if short_wins else (long, short)
    return PreferencePair.model_validate({
        "user_id": user_id, "split": split, "conversation_id": f"{user_id}-{index}",
        "context": [{"role": "user", "content": f"How do I {topic}?"}],
        "chosen": {"role": "model", "content": chosen}, "rejected": {"role": "model", "content": rejected},
    })


def _user_with(train: int, val: int, short_wins: bool = True, user_id: str = "u1") -> UserPairs:
    return UserPairs(user_id, train=[_pair(i, "train", short_wins, user_id) for i in range(train)],
                     val=[_pair(train + i, "val", short_wins, user_id) for i in range(val)],
                     test=[_pair(train + val + i, "test", short_wins, user_id) for i in range(2)])


@pytest.fixture
def pair():
    return _pair


@pytest.fixture
def user_with():
    return _user_with


@pytest.fixture
def fake_runner(monkeypatch):
    """`prefcraft.runner.run_step` with no server and no MLflow: its model session is the settings as given, and its
    tracker the FakeTracker returned, which keeps every run the runner and the step opened."""
    from prefcraft import runner
    from tests.fakes import FakeTracker

    fake = FakeTracker()
    monkeypatch.setattr(runner, "model_session", nullcontext)
    monkeypatch.setattr(runner, "start_tracking", lambda session: fake)
    return fake
