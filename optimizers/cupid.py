"""What compiling CUPID's preference inferrer needs beyond the shared prompt optimizer: its labeled examples, and
loading the compiled program.

DSPy uses a training example itself as a labeled demo, and the prompt shows only the predictor's fields: the examples
handed to the optimizer carry the gold preference under the inferrer's output name too, or a labeled demo would reach
the prompt without its answer (and the adapter would leave it out). The compile metric is
`prefcraft.components.cupid.metrics.PreferenceF1`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy

from prefcraft.optimizers.artifacts import load_compiled, read_metadata
from prefcraft.programs.cupid import PreferenceInferrer

PROGRAM_NAME = "cupid_inferrer"


def labeled(example: dspy.Example) -> dspy.Example:
    """A training example that is also a complete demo of the inferrer: its gold preference named `preference`."""
    return example.copy(preference=example.gold_preference)


def new_inferrer(metadata: dict[str, Any]) -> PreferenceInferrer:
    """A fresh inferrer of the variant a compiled file's metadata names."""
    return PreferenceInferrer(metadata.get("variant", "relevant"))


PROGRAMS = {PROGRAM_NAME: new_inferrer}
"""The program a compiled file names, built fresh from its metadata (`prefcraft.load`)."""


def load_inferrer(path: Path) -> tuple[PreferenceInferrer, dict[str, Any]]:
    """A compiled inferrer (its variant read from the file's metadata) and that metadata."""
    metadata = read_metadata(path)
    inferrer = new_inferrer(metadata)
    load_compiled(inferrer, path, program_name=PROGRAM_NAME)
    return inferrer, metadata
