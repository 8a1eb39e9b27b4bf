"""Import a persona prompt released with the SynthesizeMe paper, so that `fit --persona-prompt` starts from the paper's
own optimized Θ.

The reference repository (SALT-NLP/SynthesizeMe, `synthesizeme/prompts/llama3b.json`, `llama8b.json`,
`llama70b.json`) releases one MIPROv2-optimized persona program per Llama size, saved by DSPy 2.6:

    {"synthesize.predict": {"lm": null, "traces": [], "train": [],
                            "demos": [{"augmented": true, "past_judgements": "...", "reasoning": "...",
                                       "synthesized_persona": "..."}, ...],
                            "signature": {"instructions": "...", "fields": [{"prefix": "...", "description": "..."},
                                                                            ... three fields ...]}},
     "metadata": {"dependency_versions": {"python": "3.12", "dspy": "2.6.12", "cloudpickle": "3.1"}}}

Its predictor has the same name as prefcraft's persona synthesizer, but its fields are named as in the paper's
Figure 12 (`past_judgements`, `synthesized_persona`) and it carries no prefcraft metadata. The import keeps its
instructions and demos (Θ: what MIPROv2 optimized), renames the demos' fields to prefcraft's and writes a compiled
program that every command loading a persona prompt reads as it reads one compiled by `compile-persona`. The field
descriptions stay prefcraft's: the released files keep Figure 12's, which prefcraft's paraphrase.

The released demos' past judgments are written in the reference's layout, not in the one prefcraft gives the
synthesizer (`format_judgments`); a model reads both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy

from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme.fit import PERSONA_SYNTHESIZER
from prefcraft.components.synthesizeme.options import ImportPersonaPromptOptions
from prefcraft.errors import CompiledProgramError
from prefcraft.optimizers.artifacts import METADATA_KEY, read_program_json, save_compiled
from prefcraft.programs.persona import PersonaSynthesizer

RELEASED_PREDICTOR = "synthesize.predict"
RELEASED_FIELDS = {"past_judgements": "past_judgments", "reasoning": "reasoning", "synthesized_persona": "persona"}
"""A released demo's field -> prefcraft's `SynthesizePersona` field."""
DEMO_FLAGS = {"augmented"}
"""Keys DSPy adds to a demo besides its fields (a bootstrapped demo is `augmented`)."""
NOT_RELEASED_HINT = "give one of the reference repository's synthesizeme/prompts/*.json files, as released"


def import_persona_prompt(options: ImportPersonaPromptOptions, run: StepRun) -> Path:
    return import_released_persona_prompt(options.released, options.output)


def import_released_persona_prompt(released: Path, output: Path) -> Path:
    """Write the released persona program at `released` to `output` as a compiled persona prompt for
    `fit --persona-prompt`; returns `output`."""
    predictor, dspy_version = _read_released(released)
    synthesizer = PersonaSynthesizer()
    predict = synthesizer.synthesize.predict
    predict.signature = predict.signature.with_instructions(predictor["signature"]["instructions"])
    predict.demos = [_prefcraft_demo(demo, released, number) for number, demo in enumerate(predictor["demos"], 1)]
    return save_compiled(synthesizer, output, program_name=PERSONA_SYNTHESIZER, imported_from=str(released),
                         imported_dspy_version=dspy_version)


def _read_released(path: Path) -> tuple[dict[str, Any], str | None]:
    """The released predictor's state and the DSPy version that saved it."""
    state = read_program_json(path, "released persona program")
    if isinstance(state, dict) and METADATA_KEY in state:
        raise CompiledProgramError(f"{path} was saved by prefcraft, not released with the paper",
                                   "pass it to --persona-prompt as it is")
    predictor = state.get(RELEASED_PREDICTOR) if isinstance(state, dict) else None
    if not isinstance(predictor, dict) or not isinstance(predictor.get("demos"), list) or not isinstance(
        predictor.get("signature", {}).get("instructions"), str
    ):
        raise CompiledProgramError(
            f"{path} is not a released SynthesizeMe persona program (no '{RELEASED_PREDICTOR}' with instructions "
            "and demos)", NOT_RELEASED_HINT,
        )
    return predictor, state.get("metadata", {}).get("dependency_versions", {}).get("dspy")


def _prefcraft_demo(demo: dict[str, Any], path: Path, number: int) -> dspy.Example:
    unknown = sorted(set(demo) - set(RELEASED_FIELDS) - DEMO_FLAGS)
    if unknown:
        raise CompiledProgramError(
            f"{path}: demo {number} has field(s) {', '.join(unknown)}, not those of the paper's persona signature "
            f"({', '.join(RELEASED_FIELDS)})", NOT_RELEASED_HINT,
        )
    return dspy.Example(**{RELEASED_FIELDS.get(key, key): value for key, value in demo.items()})
