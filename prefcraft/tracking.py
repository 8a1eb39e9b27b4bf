"""MLflow glue: every command that compiles or evaluates is one run (child runs per user), with DSPy autologging.

A run that raises is ended with status FAILED by `mlflow.start_run`'s context manager; whatever was logged stays.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prefcraft.settings import Settings

logger = logging.getLogger(__name__)

MAX_PARAM_CHARS = 500


def start_tracking(settings: Settings) -> None:
    import mlflow

    mlflow.set_tracking_uri(settings.tracking_uri)
    mlflow.set_experiment(settings.experiment)
    # Autolog patches compile/Evaluate and must run in the thread that owns DSPy's settings (the main thread).
    # No traces from evaluations: their wrapper turns a metric that raises into a None score, which dspy.Evaluate
    # cannot add up, so one unparseable judge reply would fail the whole evaluation instead of that example.
    mlflow.dspy.autolog(
        log_compiles=True, log_evals=True, log_traces_from_compile=False, log_traces_from_eval=False, silent=True
    )


@contextmanager
def tracked_run(name: str, params: Mapping[str, Any] | None = None, *, nested: bool = False) -> Iterator[Any]:
    """A run; one started while another is active (a command inside a tour or an experiment) nests under it."""
    import mlflow

    with mlflow.start_run(run_name=name, nested=nested or mlflow.active_run() is not None) as run:
        if params:
            mlflow.log_params({key: _param_value(value) for key, value in params.items()})
        yield run


def log_metrics(metrics: Mapping[str, float]) -> None:
    import mlflow

    mlflow.log_metrics(dict(metrics))


def log_json(obj: Any, artifact_name: str) -> None:
    """Log `obj` as a JSON artifact of the active run."""
    import mlflow

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / artifact_name
        path.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        mlflow.log_artifact(str(path))


def log_file(path: Path) -> None:
    import mlflow

    mlflow.log_artifact(str(path))


def model_params(settings: Settings) -> dict[str, Any]:
    """What a run needs to say about its models. Never the keys themselves."""
    params: dict[str, Any] = {}
    for role in ("task", "prompt", "judge"):
        model = settings.model_for(role)
        params[f"{role}_model"] = model.model
        params[f"{role}_api_base"] = model.api_base or ""
        params[f"{role}_temperature"] = model.temperature
        params[f"{role}_max_tokens"] = model.max_tokens
        params[f"{role}_structured_output"] = model.structured_output
    return params


def data_digest(source: str | Path) -> str:
    """sha256 (first 16 hex) of a local data file; the name itself for a hub dataset."""
    path = Path(source)
    if not path.is_file():
        return str(source)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _param_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 3] + "..."
