"""What a component is to the rest of prefcraft: its steps (flags and a run function each), the MLflow runs they
open, and the comparison its demo gives the tour. Each component's `commands` module builds one `Component`;
`prefcraft.registry` lists them, and the command line, tour, experiments, sweeps, report and Python API read it."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Emit = Callable[[str], None]


@dataclass(frozen=True)
class Comparison:
    """A demo's headline: the component's metric for its baseline and for its personalized method."""

    metric: str
    baseline: str
    baseline_score: float
    personalized: str
    personalized_score: float
    scale: str
    """How to print the scores: "%" (a share, as a percentage) or "points" (the metric's own scale, 2 decimals)."""


@dataclass(frozen=True)
class Step:
    help: str
    add_flags: Callable[[argparse.ArgumentParser], None]
    """Adds the step's own flags; the settings flags (models, server, tracking) are added after them."""
    run: Callable[[argparse.Namespace, Any, Emit], Any]
    """Runs the step from its parsed flags and the settings; returns its outcome (what its report is made from)."""


@dataclass(frozen=True)
class Demo:
    """How the tour runs the component: the demo's command line and the comparison drawn from its outcome."""

    argv: Callable[[Path | None], list[str] | None]
    """The demo's arguments after `prefcraft <component>`, given the SenseBench path; None when it cannot run."""
    compare: Callable[[Any], Comparison]


@dataclass(frozen=True)
class Component:
    name: str
    """The command word: `prefcraft <name> <step>`."""
    title: str
    """The name in tables and reports."""
    help: str
    steps: Mapping[str, Step]
    run_names: tuple[str, ...]
    """The MLflow runs its steps open, by name."""
    demo: Demo
    sweepable: bool = False
    """Its `compile` step returns a compile outcome (a ship verdict and its usage), so a sweep can search over it."""
