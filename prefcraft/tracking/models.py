"""Compiled programs as MLflow models: logged with the run that made them, the winners registered and promoted.

A program is logged as an MLflow pyfunc model "from code" (`served_program.py`, no pickle) whose one artifact is the
compiled JSON that DSPy's own `save` wrote (with prefcraft's metadata); loading it back is `prefcraft.load`. A
program the ship gate chose becomes a version of the registered model named after the program and the task model (a
fitted judge: and its user), with the alias `champion`; one that lost is logged, never registered. Anywhere prefcraft
reads a compiled file (`prefcraft.load`, `--compiled`, `--persona-prompt`, ...) a `models:/<name>@<alias>`,
`models:/<name>/<version>` or `models:/<model id>` URI reads the JSON of that model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefcraft.errors import CompiledProgramError

MODEL_URI_PREFIX = "models:/"
CHAMPION = "champion"
PROGRAM_ARTIFACT = "program"  # the compiled JSON's key among the model's artifacts
# The tags on the run that logged a program, for the report's links: its logged model, and the version it became.
MODEL_ID_TAG = "prefcraft.model_id"
REGISTERED_TAG, VERSION_TAG = "prefcraft.registered_model", "prefcraft.model_version"
SERVED_PROGRAM = Path(__file__).parent.parent / "served_program.py"


@dataclass(frozen=True)
class LoggedProgram:
    """A program logged as a model (`model_uri`: `models:/m-<id>`), and its registered version if it was promoted."""

    model_uri: str
    registered_name: str | None = None
    version: str | None = None

    @property
    def alias_uri(self) -> str | None:
        return f"{MODEL_URI_PREFIX}{self.registered_name}@{CHAMPION}" if self.registered_name else None

    @property
    def model_id(self) -> str:
        return self.model_uri.removeprefix(MODEL_URI_PREFIX)


def logged_program_of(tags: Mapping[str, str]) -> LoggedProgram | None:
    """The program a run logged, read from the tags `log_program` set on the run; None where it logged none."""
    if MODEL_ID_TAG not in tags:
        return None
    return LoggedProgram(f"{MODEL_URI_PREFIX}{tags[MODEL_ID_TAG]}", tags.get(REGISTERED_TAG), tags.get(VERSION_TAG))


def is_model_uri(path: str | Path) -> bool:
    return str(path).startswith(MODEL_URI_PREFIX)


def registered_name(program_name: str, task_model: str, user_id: str | None = None) -> str:
    """The registered model a promoted program becomes a version of: `<program>[-<user>]-<task model>`, each part
    made safe for MLflow's names (a model's `org/name` keeps its last part)."""
    parts = [program_name, user_id, task_model.rsplit("/", 1)[-1]]
    return "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", part) for part in parts if part)


def input_example(example: Any) -> dict[str, str] | None:
    """A model request from one `dspy.Example`: its inputs, as DSPy's `Evaluate` calls a program with them; None
    when one is not text (the request's columns are strings)."""
    inputs = dict(example.inputs())
    return inputs if inputs and all(isinstance(value, str) for value in inputs.values()) else None


def log_program(path: Path, *, name: str, request: dict[str, str] | None, metadata: Mapping[str, Any],
                promote_as: str | None) -> LoggedProgram:
    """Log the compiled JSON at `path` as a model of the active run, with `request` as its input example; when
    `promote_as` is given, register it under that name and point the alias `champion` at the new version."""
    import mlflow
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ColSpec, Schema

    signature = ModelSignature(inputs=Schema([ColSpec("string", field) for field in request])) if request else None
    info = mlflow.pyfunc.log_model(
        name=name, python_model=str(SERVED_PROGRAM), artifacts={PROGRAM_ARTIFACT: str(path)}, signature=signature,
        input_example=request, metadata={"prefcraft": dict(metadata)},
        pip_requirements=[f"prefcraft=={_version()}"],
    )
    mlflow.set_tag(MODEL_ID_TAG, info.model_id)
    if promote_as is None:
        return LoggedProgram(info.model_uri)
    version = mlflow.register_model(info.model_uri, promote_as)
    mlflow.MlflowClient().set_registered_model_alias(promote_as, CHAMPION, version.version)
    mlflow.set_tags({REGISTERED_TAG: promote_as, VERSION_TAG: str(version.version)})
    return LoggedProgram(info.model_uri, promote_as, str(version.version))


def downloaded_program(uri: str | Path) -> Path:
    """The compiled JSON of the model at `uri` (`models:/...`), downloaded from MLflow's current tracking store."""
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        folder = Path(mlflow.artifacts.download_artifacts(artifact_uri=str(uri)))
    except MlflowException as error:
        raise CompiledProgramError(f"no model {uri} in the MLflow store {mlflow.get_tracking_uri()} "
                                   f"({error.message.splitlines()[0]})",
                                   "list the registered models in the MLflow UI, or give --tracking-uri") from None
    found = sorted((folder / "artifacts").glob("*.json"))
    if len(found) != 1:
        raise CompiledProgramError(f"the model {uri} holds no compiled prefcraft program",
                                   "log it with prefcraft (a compile or a fit)")
    return found[0]


def _version() -> str:
    from importlib.metadata import version

    return version("prefcraft")
