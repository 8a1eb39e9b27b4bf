"""The compile verdict as a line of the terminal report, shared by every component's compile."""

from __future__ import annotations

from prefcraft.optimizers.compile_selection import CompileVerdict


def format_verdict(verdict: CompileVerdict, score_name: str) -> str:
    """Whether a compile ships, and why: its validation score against the uncompiled program's."""
    if verdict.registered:
        outcome = "shipped (registered in compiled/index.json)"
    elif verdict.won:
        outcome = "saved (outside compiled/, not registered)"
    else:
        outcome = f"NOT shipped: {verdict.reason}"
    return (f"  validation {score_name}: uncompiled {100 * verdict.uncompiled_score:.1f}%, compiled "
            f"{100 * verdict.compiled_score:.1f}%; degenerate outputs: uncompiled {verdict.uncompiled_degenerate}, "
            f"compiled {verdict.compiled_degenerate}\n  {verdict.path}: {outcome}")
