"""Compile the persona synthesizer's prompt (instructions + demos) once over training users with MIPROv2.

Each training user contributes one example: the past judgments SynthesizeMe's step 1 (`collect_evidence`) chose for
them. The metric is the accuracy, on that user's validation pairs in both orders, of the default judge given the
synthesized persona.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import dspy

from prefcraft.metrics.pairwise import preference_correct
from prefcraft.optimizers.synthesizeme import PersonaEvidence
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer

MINIBATCH_SIZE = 35  # MIPROv2's default; smaller valsets are evaluated whole


@dataclass
class PersonaPromptConfig:
    """MIPROv2 settings. Defaults are the paper's (Appendix F); the embedded demo uses a much smaller budget.

    Candidates: `num_candidates` instruction candidates and demo sets, `num_trials` Optuna trials.
    Demos: `max_bootstrapped_demos` and `max_labeled_demos` (bootstrapped must be >= 1 in DSPy 3.4.1).
    Proposer: `view_data_batch_size` examples per data-summary call; `minibatch_full_eval_steps` between full evals.
    Runtime: `num_threads` parallel calls; `seed` fixes MIPROv2's sampling (`prefcraft compile-persona` sets it from
    `settings.seed`).
    """

    num_candidates: int = 20
    num_trials: int = 30
    max_bootstrapped_demos: int = 10
    max_labeled_demos: int = 6
    view_data_batch_size: int = 1
    minibatch_full_eval_steps: int = 3
    bootstrap_threshold: float = 0.5
    num_threads: int = 4
    seed: int = 9

    def as_params(self) -> dict[str, object]:
        return asdict(self)


class PersonaMetric:
    """Accuracy of the persona-conditioned judge on the user's validation pairs."""

    def __init__(self, evidence: Sequence[PersonaEvidence], threshold: float):
        self.val_examples = {prepared.user_id: prepared.val_examples for prepared in evidence}
        self.threshold = threshold

    def __call__(self, example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float | bool:
        persona = getattr(prediction, "persona", "") or ""
        judge = PreferenceJudge(persona)
        examples = self.val_examples[example.user_id]
        predictions = judge.batch(examples, max_errors=len(examples) + 1, disable_progress_bar=True)
        score = sum(
            float(preference_correct(ex, pred)) for ex, pred in zip(examples, predictions, strict=True) if pred
        ) / max(len(examples), 1)
        return score if trace is None else score >= self.threshold


def persona_examples(evidence: Sequence[PersonaEvidence]) -> list[dspy.Example]:
    return [
        dspy.Example(user_id=prepared.user_id, past_judgments=prepared.past_judgments).with_inputs("past_judgments")
        for prepared in evidence
    ]


def compile_persona_prompt(
    trainset: Sequence[PersonaEvidence],
    valset: Sequence[PersonaEvidence],
    config: PersonaPromptConfig,
    *,
    prompt_model: dspy.LM | None = None,
    task_model: dspy.LM | None = None,
) -> PersonaSynthesizer:
    """MIPROv2 over the persona synthesizer; the returned program carries `score` and `trial_logs` from DSPy."""
    metric = PersonaMetric([*trainset, *valset], config.bootstrap_threshold)
    optimizer = dspy.MIPROv2(
        metric=metric,
        prompt_model=prompt_model,
        task_model=task_model,
        auto=None,
        num_candidates=config.num_candidates,
        max_bootstrapped_demos=config.max_bootstrapped_demos,
        max_labeled_demos=config.max_labeled_demos,
        num_threads=config.num_threads,
        seed=config.seed,  # here, not in compile(): MIPROv2.compile reads seed=0 as unset
        verbose=False,
    )
    valset_examples = persona_examples(valset)
    return optimizer.compile(
        PersonaSynthesizer(),
        trainset=persona_examples(trainset),
        valset=valset_examples,
        num_trials=config.num_trials,
        minibatch=len(valset_examples) > MINIBATCH_SIZE,
        minibatch_size=MINIBATCH_SIZE,
        minibatch_full_eval_steps=config.minibatch_full_eval_steps,
        view_data_batch_size=config.view_data_batch_size,
    )
