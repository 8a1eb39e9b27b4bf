"""What the fault tests share: a command's settings flags against a proxy, its one error line, and its MLflow runs."""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

import mlflow
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore


def flags(tmp_path: Path, api_base: str, *extra: str) -> list[str]:
    return ["--no-serve", "--task-api-base", api_base, "--task-max-tokens", "256", "--task-timeout-s", "600",
            "--threads", "2", "--tracking-uri", tracking_uri(tmp_path), "--cache-dir", str(tmp_path / "cache"), *extra]


def tracking_uri(tmp_path: Path) -> str:
    """An MLflow database in `tmp_path`, copied from an empty one made once: making its tables takes seconds."""
    database = tmp_path / "mlflow.db"
    if not database.exists():
        tmp_path.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_empty_database(), database)
    return f"sqlite:///{database}"


@functools.cache
def _empty_database() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="prefcraft-mlflow-"))
    SqlAlchemyStore(f"sqlite:///{folder}/mlflow.db", str(folder / "artifacts"))
    return folder / "mlflow.db"


def assert_one_unreachable_line(error: str, api_base: str) -> None:
    assert error.count(f"model server at {api_base} is unreachable") == 1, error
    assert "Traceback" not in error, error


def parent_runs(tmp_path: Path) -> list[mlflow.entities.Run]:
    return [run for run in _runs(tmp_path) if "mlflow.parentRunId" not in run.data.tags]


def child_runs(tmp_path: Path, parent: mlflow.entities.Run) -> list[mlflow.entities.Run]:
    return [run for run in _runs(tmp_path) if run.data.tags.get("mlflow.parentRunId") == parent.info.run_id]


def _runs(tmp_path: Path) -> list[mlflow.entities.Run]:
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    return mlflow.search_runs(experiment_names=["prefcraft"], output_format="list", order_by=["start_time ASC"])
