"""The MLflow model "from code" that every compiled prefcraft program is logged as (`model_registry.log_program`).

Loading reads the compiled JSON (the model's `program` artifact) with `prefcraft.load`; each request row is one call
of the program with the row's columns as its arguments, answered with the prediction's fields. Loaded where a DSPy LM
is configured (`mlflow.pyfunc.load_model` inside `prefcraft.models()`, or MLflow checking the input example while a
compile logs the model), it runs on that LM; elsewhere (`mlflow models serve`) on the task model of the settings the
commands read, the defaults then the `PREFCRAFT_*` environment variables: `PREFCRAFT_TASK__API_BASE` names its server.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import mlflow
import pandas as pd
from mlflow.pyfunc import PythonModel


class CompiledProgram(PythonModel):
    def load_context(self, context: Any) -> None:
        import dspy

        from prefcraft.api import load
        from prefcraft.engine.session import program_settings
        from prefcraft.settings import load_settings
        from prefcraft.tracking.models import PROGRAM_ARTIFACT

        self.program = load(context.artifacts[PROGRAM_ARTIFACT]).program
        self.model = None
        if dspy.settings.lm is None:
            settings = load_settings()
            self.model = program_settings(settings.task, settings.small_model_profile())

    # A DataFrame is the one hint MLflow reads no schema from (the logged signature is the request's columns), and
    # with no hint at all it warns at every log.
    def predict(self, context, model_input: pd.DataFrame, params=None):
        import dspy

        rows = model_input.to_dict(orient="records") if hasattr(model_input, "to_dict") else model_input
        rows = [rows] if isinstance(rows, dict) else rows
        with dspy.context(**self.model) if self.model else nullcontext():
            return [dict(self.program(**row).items()) for row in rows]


mlflow.models.set_model(CompiledProgram())
