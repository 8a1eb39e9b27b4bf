"""Compile the persona synthesizer's prompt (instructions + demos) once over training users (MIPROv2 by default).

Each training user contributes one example: the past judgments SynthesizeMe's step 1 (`collect_evidence`) chose for
them. The metric scores the persona a prompt synthesized by how well the judge given it predicts the user's scored
pairs (`PersonaMetric`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import dspy

from prefcraft.metrics.pairwise import preference_correct
from prefcraft.optimizers.prompt_optimizer import OptimizerConfig, PromptOptimizer
from prefcraft.optimizers.synthesizeme import PersonaEvidence
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer

ScoredPairs = Mapping[str, list[dspy.Example]]


class PersonaMetric:
    """A persona's score for its user: the accuracy of the judge given the persona on the user's scored judge
    examples, less `baselines[user]` when given (the default judge's accuracy on the same examples: the improvement
    the paper optimizes, App. F). Which score makes a bootstrapped demo is the optimizer config's `metric_threshold`."""

    def __init__(self, scored: ScoredPairs, baselines: Mapping[str, float] | None = None):
        self.scored = scored
        self.baselines = baselines

    def __call__(self, example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float:
        persona = getattr(prediction, "persona", "") or ""
        accuracy = judge_accuracy(PreferenceJudge(persona), self.scored[example.user_id])
        return accuracy if self.baselines is None else accuracy - self.baselines[example.user_id]


def judge_accuracy(judge: PreferenceJudge, examples: list[dspy.Example]) -> float:
    """The share of `examples` the judge gets right; a judgment that failed counts wrong."""
    predictions = judge.batch(examples, max_errors=len(examples) + 1, disable_progress_bar=True)
    return sum(
        float(preference_correct(ex, pred)) for ex, pred in zip(examples, predictions, strict=True) if pred
    ) / max(len(examples), 1)


def default_judge_baselines(scored: ScoredPairs) -> dict[str, float]:
    """Each user's default (non-personalized) judge accuracy on their scored examples, for the improvement metric."""
    return {user_id: judge_accuracy(PreferenceJudge(), examples) for user_id, examples in scored.items()}


def persona_examples(evidence: Sequence[PersonaEvidence]) -> list[dspy.Example]:
    return [
        dspy.Example(user_id=prepared.user_id, past_judgments=prepared.past_judgments).with_inputs("past_judgments")
        for prepared in evidence
    ]


def compile_persona_prompt(
    trainset: Sequence[PersonaEvidence],
    valset: Sequence[PersonaEvidence],
    config: OptimizerConfig,
    metric: PersonaMetric,
    *,
    prompt_model: dspy.LM | None = None,
    task_model: dspy.LM | None = None,
) -> PersonaSynthesizer:
    """The configured optimizer (MIPROv2 by default) over a new persona synthesizer, scoring each persona with
    `metric`; the result carries its `compile_record`."""
    optimizer = PromptOptimizer(metric, config, prompt_model=prompt_model, task_model=task_model)
    return optimizer.compile(PersonaSynthesizer(), trainset=persona_examples(trainset),
                             valset=persona_examples(valset))
