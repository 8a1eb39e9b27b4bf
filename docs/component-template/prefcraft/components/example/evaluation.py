"""`prefcraft example evaluate`: the template's one step. Its `load` reads and checks the input before any model
server starts; its work runs inside the model session the runner opened (`prefcraft/runner.py`), opens its MLflow run
and records its metrics and result rows through the tracker, and returns the outcome its report is made from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefcraft.components.component import StepRun
from prefcraft.components.example.options import EvaluateOptions
from prefcraft.errors import ConfigError
from prefcraft.programs.example import Answerer
from prefcraft.runtime import lm_context
from prefcraft.tracking import model_params, write_results
from prefcraft.usage import LMUsage, metered

RUN_NAME = "example-evaluate"


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


def evaluate(options: EvaluateOptions, run: StepRun) -> EvaluationOutcome:
    requests: list[str] = run.loaded
    params = {"requests": len(requests), **model_params(run.session)}
    with run.tracker.run(RUN_NAME, params), lm_context(run.session, "task"), metered() as meter:
        answers = [Answerer()(request=request).answer for request in requests]
        answered = sum(bool(answer.strip()) for answer in answers)
        run.tracker.log_metrics({"answered_share": answered / len(requests), **meter.usage.as_metrics()})
        path = write_results(run.tracker, options.output_dir / "example-answers.jsonl",
                             ({"request": request, "answer": answer}
                                                for request, answer in zip(requests, answers, strict=True)))
    return EvaluationOutcome(answered, len(requests), path, meter.usage)
