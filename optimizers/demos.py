"""Demos as the prompt shows them: each predictor keeps the demos that reach its prompt, with its own fields only.

DSPy places a labeled demo in every predictor as the training example it is (LabeledFewShot, BootstrapFewShot), so it
carries whatever the example carries: the program's inputs, gold labels under their own names, ids. The adapter renders
only the signature's fields and leaves out a demo without one input and one output among them; the compiled JSON still
held such demos, so a program could read as few-shot while its prompts were zero-shot. Bootstrapped demos come from
the predictor's own trace and keep DSPy's `augmented` marker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dspy

PROVENANCE = "augmented"  # DSPy marks bootstrapped demos; kept so a saved file says where each demo came from


def reaches_prompt(demo: Mapping[str, Any] | dspy.Example, signature: type[dspy.Signature]) -> bool:
    """Whether DSPy's adapters render `demo` for `signature`: it needs at least one input and one output field."""
    return any(name in demo for name in signature.input_fields) and any(
        name in demo for name in signature.output_fields
    )


def keep_prompt_demos(program: dspy.Module) -> dspy.Module:
    """`program` with each predictor's demos cut down to what its prompt shows (in place; the prompts do not change)."""
    for predictor in program.predictors():
        signature = predictor.signature
        predictor.demos = [_signature_view(demo, signature) for demo in predictor.demos
                           if reaches_prompt(demo, signature)]
    return program


def _signature_view(demo: Mapping[str, Any] | dspy.Example, signature: type[dspy.Signature]) -> dspy.Example:
    return dspy.Example(**{name: demo[name] for name in (*signature.fields, PROVENANCE) if name in demo})
