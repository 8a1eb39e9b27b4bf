"""`--executor processes`: each user (fit) or user and method (evaluate) in one of several spawned processes of this
machine, against a stand-in server: the same requests, judgments and files as the local executor, the driver writing
the JSON and the MLflow child runs, and a rerun that resumes and asks nothing."""

import math

import mlflow
from openai_standin import StandInServer

from prefcraft import api
from prefcraft.commands.main import make_parser
from prefcraft.executors import ExecutorOptions, map_in_workers, process_map
from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig
from tests.worker_runs import USERS, requests, settings_for, write_data


def test_processes_give_every_items_result_and_the_options_choose_them():
    assert sorted(process_map(math.sqrt, [1, 4, 9], workers=2)) == [(1, 1.0), (4, 2.0), (9, 3.0)]
    assert sorted(map_in_workers(math.sqrt, [16], ExecutorOptions(executor="processes", workers=1))) == [(16, 4.0)]
    args = make_parser().parse_args(["synthesizeme", "fit", "--executor", "processes", "--workers", "3"])
    assert (args.executor, args.workers) == ("processes", 3)


def test_users_fitted_in_processes_are_saved_logged_and_resumed_by_the_local_executor(tmp_path, user_with):
    server = StandInServer()
    try:
        data = write_data(tmp_path / "pairs.jsonl", user_with)
        settings = settings_for(server, tmp_path, "fit")
        config = SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2, max_demos=2, num_threads=2)
        summary = api.fit(settings, data=data, fitted_dir=tmp_path / "fitted", config=config, executor="processes",
                          workers=2)

        assert set(summary.fitted) == set(USERS) and not summary.skipped and server.bodies
        mlflow.set_tracking_uri(settings.tracking_uri)
        runs = mlflow.search_runs(experiment_names=[settings.mlflow_experiment], output_format="list")
        [parent] = [run for run in runs if run.info.run_name == "fit-synthesizeme"]
        children = {run.info.run_name for run in runs if run.data.tags.get("mlflow.parentRunId") == parent.info.run_id}
        assert children == set(USERS) and parent.data.metrics["users_fitted"] == len(USERS)

        server.bodies.clear()
        again = api.fit(settings, data=data, fitted_dir=tmp_path / "fitted", config=config)
        assert again.resumed == summary.fitted and not again.fitted and server.bodies == []
    finally:
        server.close()


def test_processes_judge_as_the_local_executor_and_a_rerun_asks_nothing(tmp_path, user_with):
    server = StandInServer()
    try:
        data = write_data(tmp_path / "pairs.jsonl", user_with)

        def run(name, executor):
            return api.evaluate(settings_for(server, tmp_path, name), data=data, methods=["baseline", "memory"],
                                users=list(USERS), fitted_dir=tmp_path / "fitted", output_dir=tmp_path / name,
                                executor=executor, workers=2)

        here = run("local", "local")
        asked_here = requests(server)
        server.bodies.clear()
        in_processes = run("processes", "processes")

        assert requests(server) == asked_here  # the same requests, each once
        for method in ("baseline", "memory"):
            assert in_processes[method].judgments == here[method].judgments
            name = f"judgments-{method}.jsonl"
            assert (tmp_path / "processes" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
        server.bodies.clear()
        run("processes", "processes")  # the workers answer every call from the driver's DSPy cache directory
        assert server.bodies == []
    finally:
        server.close()
