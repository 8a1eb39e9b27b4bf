import mlflow

from prefcraft.tracking import tracked_run


def test_a_run_started_inside_another_nests_under_it(tmp_path):
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("nesting")
    with tracked_run("tour") as parent, tracked_run("cupid-evaluate") as child:
        pass
    logged = mlflow.get_run(child.info.run_id)
    assert logged.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert "mlflow.parentRunId" not in mlflow.get_run(parent.info.run_id).data.tags
