"""Fakes the tests share: a tracker in place of MLflow, and an LM engine that fills the output fields a prompt
asks for."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dspy.lm15 import Message, Response, TextPart, Usage, response_to_events


@dataclass
class TrackedRun:
    name: str
    params: dict[str, Any]
    nested: bool
    metrics: dict[str, float] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    programs: list[tuple[Path, str, str | None]] = field(default_factory=list)  # path, name, registered as


class FakeTracker:
    """A `prefcraft.tracking.runs.Tracker` that keeps every run it was asked to open, with what was logged to it."""

    def __init__(self) -> None:
        self.runs: list[TrackedRun] = []
        self._active: list[TrackedRun] = []

    @contextmanager
    def run(self, name: str, params: Mapping[str, Any] | None = None, *, nested: bool = False) -> Iterator[TrackedRun]:
        run = TrackedRun(name, dict(params or {}), nested)
        self.runs.append(run)
        self._active.append(run)
        try:
            yield run
        finally:
            self._active.pop()

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        self._active[-1].metrics.update(metrics)

    def log_file(self, path: Path) -> None:
        self._active[-1].files.append(path)

    def log_program(self, path: Path, name: str, request: dict[str, str] | None, metadata: Mapping[str, Any],
                    promote_as: str | None) -> str | None:
        self._active[-1].programs.append((path, name, promote_as))
        return None

    def named(self, name: str) -> TrackedRun:
        [run] = [run for run in self.runs if run.name == name]
        return run


OUTPUT_FIELD = re.compile(r"^\d+\. `(\w+)`", re.M)


class FieldFillingEngine:
    """A DSPy LM engine that answers every call with JSON filling each output field the prompt lists, so the
    optimizers' own calls (MIPROv2's proposer) work too. Subclasses choose the values (`value`); each call's output
    fields and whole prompt are kept in `prompts`."""

    def __init__(self) -> None:
        self.prompts: list[tuple[list[str], str]] = []

    def complete(self, request: Any) -> Response:
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system or [])
        user = "".join(message.text or "" for message in request.messages)
        block = system.split("Your output fields are:")[-1].split("All interactions")[0].split("In adhering")[0]
        fields = OUTPUT_FIELD.findall(block)
        self.prompts.append((fields, system + user))
        text = json.dumps({name: self.value(name, system, user) for name in fields})
        return Response(id=None, model="fake", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=10, output_tokens=5, total_tokens=15))

    def value(self, field: str, system: str, user: str) -> Any:
        return "text"

    def stream(self, request: Any) -> Any:
        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass
