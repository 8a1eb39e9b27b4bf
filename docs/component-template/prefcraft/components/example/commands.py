"""`prefcraft example`: the template component. Each step names its options and code through a function that imports
them when called, so that `prefcraft --help` imports no step's code; add `COMPONENT` to `prefcraft/registry.py`."""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Comparison, Component, Demo, Step, StepCode
from prefcraft.options import Options

HELP = "Example: the template component (evaluate)"


def compare(outcome: Any) -> Comparison:
    return Comparison("requests answered", "none", 0.0, "answerer", outcome.answered_share, "%")


def _evaluate_options() -> type[Options]:
    from prefcraft.components.example.options import EvaluateOptions
    return EvaluateOptions


def _evaluate_code() -> StepCode:
    from prefcraft.components.example.evaluation import evaluate, evaluation_params, load_requests
    from prefcraft.components.example.report import format_evaluation
    return StepCode(evaluate, format_evaluation, load_requests, evaluation_params)


COMPONENT = Component(
    name="example", title="Example", help=HELP,
    steps={"evaluate": Step("answer each request and count the answers", _evaluate_options, _evaluate_code,
                            run_name="example-evaluate")},
    demo=Demo(lambda sensebench: ["evaluate"], compare),
)
