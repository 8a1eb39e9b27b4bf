"""What compiling PrefDisco's question asker needs beyond the shared prompt optimizer: the asker's examples.

Examples carry only the asker's inputs (the problem and the `SimulatedUser`) and the scenario id; the compile metric
(`prefcraft.components.prefdisco.metrics.GatedPrefAlign`) looks the scenario's rubric and gold answer up by id, so
neither the hidden profile nor the gold answer is a field that MIPROv2 could show the asker (as a labelled demo) or the
proposer. With no gold turn or answer, a labelled demo never reaches a prompt: only bootstrapped demos are kept.
"""

from __future__ import annotations

import dspy

from prefcraft.programs.prefdisco import QuestionAsker, SimulatedUser

PROGRAM_NAME = "prefdisco_asker"
PROGRAMS = {PROGRAM_NAME: lambda metadata: QuestionAsker(metadata["max_turns"])}
"""The program a compiled file names, built fresh from its metadata (`prefcraft.load`)."""


def asker_example(scenario_id: str, problem: str, user: SimulatedUser) -> dspy.Example:
    return dspy.Example(scenario_id=scenario_id, problem=problem, user=user).with_inputs("problem", "user")
