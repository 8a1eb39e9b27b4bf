"""MIPROv2 with prefcraft's settings: every component's compile goes through `compile_with_miprov2`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import dspy

MINIBATCH_SIZE = 35  # MIPROv2's default; smaller valsets are evaluated whole


@dataclass
class MIPROv2Config:
    """MIPROv2 settings. Defaults are SynthesizeMe's paper budget (Appendix F); embedded demos use a much smaller one.

    Candidates: `num_candidates` instruction candidates and demo sets, `num_trials` Optuna trials.
    Demos: `max_bootstrapped_demos` and `max_labeled_demos` (bootstrapped must be >= 1 in DSPy 3.4.1).
    Proposer: `view_data_batch_size` examples per data-summary call; `minibatch_full_eval_steps` between full evals.
    `metric_threshold`: the score at which a bootstrapped trace counts as a success (metrics that return a float).
    Runtime: `num_threads` parallel calls; `seed` fixes MIPROv2's sampling (commands set it from `settings.seed`).
    """

    num_candidates: int = 20
    num_trials: int = 30
    max_bootstrapped_demos: int = 10
    max_labeled_demos: int = 6
    view_data_batch_size: int = 1
    minibatch_full_eval_steps: int = 3
    metric_threshold: float = 0.5
    num_threads: int = 4
    seed: int = 9

    def as_params(self) -> dict[str, object]:
        return asdict(self)


Metric = Callable[[dspy.Example, dspy.Prediction, object], float | bool]


def compile_with_miprov2(
    program: dspy.Module,
    *,
    trainset: Sequence[dspy.Example],
    valset: Sequence[dspy.Example],
    metric: Metric,
    config: MIPROv2Config,
    prompt_model: dspy.LM | None = None,
    task_model: dspy.LM | None = None,
) -> dspy.Module:
    """MIPROv2 over `program`; the returned program carries `score` and `trial_logs` from DSPy.

    `metric` gets DSPy's trace argument: with a trace (bootstrapping) it should return whether the score reaches
    `config.metric_threshold` (see `thresholded`).
    """
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
    return optimizer.compile(
        program,
        trainset=list(trainset),
        valset=list(valset),
        num_trials=config.num_trials,
        minibatch=len(valset) > MINIBATCH_SIZE,
        minibatch_size=MINIBATCH_SIZE,
        minibatch_full_eval_steps=config.minibatch_full_eval_steps,
        view_data_batch_size=config.view_data_batch_size,
    )


def thresholded(score: Callable[[dspy.Example, dspy.Prediction], float], threshold: float) -> Metric:
    """A MIPROv2 metric from a float score: the score when evaluating, score >= threshold when bootstrapping."""

    def metric(example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float | bool:
        value = score(example, prediction)
        return value if trace is None else value >= threshold

    return metric
