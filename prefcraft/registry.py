"""The components, in the tour's order. The command line, tour, experiments, sweeps, HTML report and Python API read
this list; adding a component is one package under prefcraft/components/ and one line here."""

from __future__ import annotations

from typing import Any

from prefcraft.components.component import Component, Emit
from prefcraft.components.cupid.commands import COMPONENT as CUPID
from prefcraft.components.lampqa.commands import COMPONENT as LAMPQA
from prefcraft.components.prefdisco.commands import COMPONENT as PREFDISCO
from prefcraft.components.sensejudge.commands import COMPONENT as SENSEJUDGE
from prefcraft.components.synthesizeme.commands import COMPONENT as SYNTHESIZEME
from prefcraft.console import echo
from prefcraft.options import Options

COMPONENTS: dict[str, Component] = {component.name: component
                                    for component in (SYNTHESIZEME, SENSEJUDGE, PREFDISCO, CUPID, LAMPQA)}


def run_step(component: str, step: str, options: Options, settings: Any, emit: Emit = echo) -> Any:
    """Runs `prefcraft <component> <step>` with its options; returns the step's outcome."""
    return COMPONENTS[component].steps[step].run(options, settings, emit)
