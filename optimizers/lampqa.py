"""What compiling LaMP-QA's PlanPers pipeline (planner + answerer) needs beyond the shared prompt optimizer: loading
the compiled program.

Training questions' gold reaches the optimizer only through the compile metric
(`prefcraft.components.lampqa.metrics.AspectScore`, the paper's aspect score) and MIPROv2's summary of the train set for
its proposer, as the paper trains its planner on the train split's aspects; the programs themselves never read a
narrative or an aspect. No example carries a plan or an answer, so a labeled demo can never reach a prompt: only
bootstrapped demos are kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefcraft.optimizers.artifacts import load_compiled, read_metadata
from prefcraft.programs.lampqa import DEFAULT_K, PLANPERS_RETRIES, BM25Retriever, PlanPers, Retriever

PROGRAM_NAME = "lampqa_planner"
PROGRAMS = {PROGRAM_NAME: lambda metadata: PlanPers(BM25Retriever(metadata.get("k", DEFAULT_K)),
                                                   retries=metadata.get("retries", PLANPERS_RETRIES))}
"""The program a compiled file names, built fresh from its metadata (`prefcraft.load`): the retries it was compiled
with (the reference's by default)."""


def load_planpers(
    path: Path, retriever: Retriever | None = None, post_chars: int | None = None, retries: int = 0
) -> tuple[PlanPers, dict[str, Any]]:
    """A compiled PlanPers and its metadata; without a retriever, BM25 with the k it was compiled with. `retries`: of a
    plan or answer whose reply does not parse (`PlanPers`)."""
    metadata = read_metadata(path)
    program = PlanPers(retriever or BM25Retriever(metadata.get("k", DEFAULT_K)), post_chars, retries)
    load_compiled(program, path, program_name=PROGRAM_NAME)
    return program, metadata
