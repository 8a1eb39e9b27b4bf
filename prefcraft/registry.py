"""The components, in the tour's order. The command line, tour, experiments, sweeps, HTML report and Python API read
this list; adding a component is one package under prefcraft/components/ and one line here."""

from __future__ import annotations

from prefcraft.components.component import Component
from prefcraft.components.cupid.commands import COMPONENT as CUPID
from prefcraft.components.lampqa.commands import COMPONENT as LAMPQA
from prefcraft.components.prefdisco.commands import COMPONENT as PREFDISCO
from prefcraft.components.sensejudge.commands import COMPONENT as SENSEJUDGE
from prefcraft.components.synthesizeme.commands import COMPONENT as SYNTHESIZEME

COMPONENTS: dict[str, Component] = {component.name: component
                                    for component in (SYNTHESIZEME, SENSEJUDGE, PREFDISCO, CUPID, LAMPQA)}

