"""`prefcraft example evaluate`: the template's one step. Its `load` reads and checks the input before any model
server starts; its `params` are those of the MLflow run the runner opens for it (`prefcraft/runner.py`); its work runs
inside that run and the model session, records its metrics and result rows through `run.tracker`, and returns the
outcome its report is made from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefcraft.components.component import StepRun
from prefcraft.components.example.options import EvaluateOptions
from prefcraft.engine.session import lm_context
from prefcraft.engine.usage import LMUsage, metered
from prefcraft.errors import ConfigError
from prefcraft.programs.example import Answerer
from prefcraft.tracking.runs import model_params


@dataclass(frozen=True)
class EvaluationOutcome:
    answered: int
    requests: int
    results: Path
    usage: LMUsage

    @property
    def answered_share(self) -> float:
        return self.answered / self.requests


def load_requests(options: EvaluateOptions) -> list[str]:
    blank = [number for number, request in enumerate(options.requests) if not request.strip()]
    if blank:
        raise ConfigError(f"option requests, item {blank[0]}: a request is empty", "give each request some text")
    return [request.strip() for request in options.requests]


def evaluation_params(options: EvaluateOptions, run: StepRun) -> dict[str, Any]:
    return {"requests": len(run.loaded), **model_params(run.session)}


def evaluate(options: EvaluateOptions, run: StepRun) -> EvaluationOutcome:
    requests: list[str] = run.loaded
    with lm_context(run.session, "task"), metered() as meter:
        answers = [Answerer()(request=request).answer for request in requests]
    answered = sum(bool(answer.strip()) for answer in answers)
    run.tracker.log_metrics({"answered_share": answered / len(requests), **meter.usage.as_metrics()})
    path = run.tracker.write_results(options.output_dir / "example-answers.jsonl",
                                     ({"request": request, "answer": answer}
                                      for request, answer in zip(requests, answers, strict=True)))
    return EvaluationOutcome(answered, len(requests), path, meter.usage)
