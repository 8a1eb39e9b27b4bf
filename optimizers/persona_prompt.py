"""Compile the persona synthesizer's prompt (instructions + demos) once over training users (MIPROv2 by default).

Each training user contributes one example: the past judgments SynthesizeMe's step 1 (`collect_evidence`) chose for
them. The metric is the accuracy, on that user's validation pairs in both orders, of the default judge given the
synthesized persona.
"""

from __future__ import annotations

from collections.abc import Sequence

import dspy

from prefcraft.metrics.pairwise import preference_correct
from prefcraft.optimizers.prompt_optimizer import OptimizerConfig, PromptOptimizer
from prefcraft.optimizers.synthesizeme import PersonaEvidence
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer


class PersonaMetric:
    """Accuracy of the persona-conditioned judge on the user's validation pairs."""

    def __init__(self, evidence: Sequence[PersonaEvidence]):
        self.val_examples = {prepared.user_id: prepared.val_examples for prepared in evidence}

    def __call__(self, example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float:
        persona = getattr(prediction, "persona", "") or ""
        judge = PreferenceJudge(persona)
        examples = self.val_examples[example.user_id]
        predictions = judge.batch(examples, max_errors=len(examples) + 1, disable_progress_bar=True)
        return sum(
            float(preference_correct(ex, pred)) for ex, pred in zip(examples, predictions, strict=True) if pred
        ) / max(len(examples), 1)


def persona_examples(evidence: Sequence[PersonaEvidence]) -> list[dspy.Example]:
    return [
        dspy.Example(user_id=prepared.user_id, past_judgments=prepared.past_judgments).with_inputs("past_judgments")
        for prepared in evidence
    ]


def compile_persona_prompt(
    trainset: Sequence[PersonaEvidence],
    valset: Sequence[PersonaEvidence],
    config: OptimizerConfig,
    *,
    prompt_model: dspy.LM | None = None,
    task_model: dspy.LM | None = None,
) -> PersonaSynthesizer:
    """The configured optimizer (MIPROv2 by default) over a new persona synthesizer; the result carries its
    `compile_record`."""
    optimizer = PromptOptimizer(PersonaMetric([*trainset, *valset]), config, prompt_model=prompt_model,
                                task_model=task_model)
    return optimizer.compile(PersonaSynthesizer(), trainset=persona_examples(trainset),
                             valset=persona_examples(valset))
