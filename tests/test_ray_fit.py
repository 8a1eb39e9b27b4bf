"""`fit --executor ray`: each user fitted as a Ray task on a local two-worker cluster, against a model on two stand-in
servers; the driver writes the JSON and the MLflow child runs, and a rerun resumes, as with the local executor."""

import json
import sys
from contextlib import nullcontext

import mlflow
import pytest
from openai_standin import StandInServer

from prefcraft import api, runner
from prefcraft.backends import managed_server
from prefcraft.backends.counters import read_prompt_cache
from prefcraft.commands.main import make_parser, run_command
from prefcraft.components.synthesizeme import fit
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.errors import ConfigError
from prefcraft.executors import ray_map
from prefcraft.optimizers.artifacts import read_metadata
from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig
from prefcraft.settings import ModelSettings, ServerSettings, Settings
from tests.fakes import FakeTracker

ray = pytest.importorskip("ray", reason="the distributed extra is not installed")
USERS = ["u1", "u2", "u3"]
SAMPLE_USER_IDS = ["sample_user_01", "sample_user_02"]


@pytest.fixture
def two_servers():
    servers = [StandInServer(), StandInServer()]
    yield servers
    for server in servers:
        server.close()


@pytest.mark.parametrize("executor", ["ray", "local"])
def test_fitted_users_are_saved_logged_and_resumed_by_either_executor(two_ray_workers, two_servers, tmp_path,
                                                                     user_with, executor):
    data = tmp_path / "pairs.jsonl"
    rows = [pair.model_dump() for user_id in USERS for user in [user_with(4, 2, user_id=user_id)]
            for pair in user.train + user.val + user.test]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    settings = Settings(task=ModelSettings(api_bases=[server.api_base for server in two_servers]), serve=False,
                        cache_dir=tmp_path / "cache", tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    config = SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2, max_demos=2, num_threads=2)

    summary = api.fit(settings, data=data, fitted_dir=tmp_path / "fitted", config=config, executor=executor)

    assert set(summary.fitted) == set(USERS) and not summary.skipped
    for user_id, path in summary.fitted.items():
        assert path == tmp_path / "fitted" / f"{user_id}.json"
        assert read_metadata(path)["user_id"] == user_id
    assert all(server.bodies for server in two_servers)  # the calls were spread over both servers
    mlflow.set_tracking_uri(settings.tracking_uri)
    runs = mlflow.search_runs(experiment_names=[settings.mlflow_experiment], output_format="list")
    [parent] = [run for run in runs if run.info.run_name == "fit-synthesizeme"]
    children = {run.info.run_name: run for run in runs if run.data.tags.get("mlflow.parentRunId") == parent.info.run_id}
    assert set(children) == set(USERS)
    assert all("val_accuracy" in run.data.metrics for run in children.values())
    assert parent.data.metrics["users_fitted"] == len(USERS)

    requests = sum(len(server.bodies) for server in two_servers)
    # resumes either's fits
    again = api.fit(settings, data=data, fitted_dir=tmp_path / "fitted", config=config, executor="ray")

    assert again.resumed == summary.fitted and not again.fitted
    assert sum(len(server.bodies) for server in two_servers) == requests


def test_the_ray_executor_without_ray_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[distributed\]'"):
        list(ray_map(str, [1]))


def test_the_fit_command_passes_the_executor_and_the_address_on(monkeypatch):
    passed = {}

    def record(run, options, users, config):
        passed.update(executor=options.executor, address=options.address)
        return fit.FitSummary()

    monkeypatch.setattr(fit, "fit_users", record)
    monkeypatch.setattr(runner, "model_session", nullcontext)  # no server: the fit itself is recorded
    monkeypatch.setattr(runner, "start_tracking", lambda session: FakeTracker())
    run_command(make_parser().parse_args(["synthesizeme", "fit", "--executor", "ray", "--address", "auto"]), Settings())
    assert passed["executor"] == "ray" and passed["address"] == "auto"


# two real servers


def short_sample(path):
    """The sample users' file with each user's first 3 train and 2 validation pairs."""
    kept, taken = [], {}
    for line in SAMPLE_USERS.read_text().splitlines():
        row = json.loads(line)
        key = (row["user_id"], row["split"])
        taken[key] = taken.get(key, 0) + 1
        if taken[key] <= {"train": 3, "val": 2}.get(row["split"], 0):
            kept.append(line)
    path.write_text("\n".join(kept) + "\n")
    return path


@pytest.mark.server
def test_two_ray_workers_fit_sample_users_through_two_real_servers(two_ray_workers, tmp_path):
    server_settings = ServerSettings(log_dir=tmp_path / "logs", n_threads=1, slots=2)
    with managed_server(server_settings) as first, managed_server(server_settings) as second:
        servers = (first, second)
        model = ModelSettings(api_bases=[server.base_url for server in servers], max_tokens=256, timeout_s=300)
        settings = Settings(task=model, serve=False, cache_dir=tmp_path / "cache",
                            tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
        # Ray and two servers are what is tested here: a short fit (3 train and 2 validation pairs a user, step 3
        # from step 1's traces) keeps it to a minute or two of CI.
        config = SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2, max_demos=2, num_threads=2,
                                    step3_traces="from_step1")
        before = [read_prompt_cache(server.base_url) for server in servers]

        summary = api.fit(settings, data=short_sample(tmp_path / "users.jsonl"), fitted_dir=tmp_path / "fitted",
                          users=SAMPLE_USER_IDS, config=config, executor="ray")

        assert set(summary.fitted) == set(SAMPLE_USER_IDS)
        assert all(read_metadata(path)["record"]["persona"] for path in summary.fitted.values())
        for server, counters in zip(servers, before, strict=True):
            answered = read_prompt_cache(server.base_url) - counters
            assert answered.evaluated + answered.cached > 0, f"{server.base_url} answered nothing"
