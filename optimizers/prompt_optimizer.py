"""Every component's compile: one of DSPy's optimizers, chosen by name, with prefcraft's settings.

`miprov2` (default; the papers' optimizer), `gepa` (DSPy's reflective optimizer; the prompt model reflects) and
`bootstrap_rs` (BootstrapFewShotWithRandomSearch: demo sets only, the cheap baseline).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import dspy
from dspy.utils.exceptions import AdapterParseError

from prefcraft.errors import CompileError

MINIBATCH_SIZE = 35  # MIPROv2's default; smaller valsets are evaluated whole
OptimizerName = Literal["miprov2", "gepa", "bootstrap_rs"]
OPTIMIZERS: tuple[OptimizerName, ...] = ("miprov2", "gepa", "bootstrap_rs")


@dataclass
class OptimizerConfig:
    """The optimizer and its budget. Defaults are SynthesizeMe's paper budget for MIPROv2 (Appendix F); embedded demos
    use a much smaller one.

    MIPROv2: `num_candidates` instruction candidates and demo sets, `num_trials` Optuna trials, `view_data_batch_size`
    examples per data-summary call, `minibatch_full_eval_steps` between full evaluations.
    Demos (MIPROv2, bootstrap_rs): `max_bootstrapped_demos` (>= 1 in DSPy 3.4.1) and `max_labeled_demos`.
    GEPA: `max_metric_calls` metric calls in all (its one budget option).
    bootstrap_rs: `num_candidates` random demo sets, each scored on the whole valset.
    `metric_threshold`: the score at which a bootstrapped trace counts as a success (metrics that return a float).
    Runtime: `num_threads` parallel calls; `seed` fixes the optimizer's sampling (commands set it from
    `settings.seed`).
    """

    name: OptimizerName = "miprov2"
    num_candidates: int = 20
    num_trials: int = 30
    max_bootstrapped_demos: int = 10
    max_labeled_demos: int = 6
    view_data_batch_size: int = 1
    minibatch_full_eval_steps: int = 3
    max_metric_calls: int = 400
    metric_threshold: float = 0.5
    num_threads: int = 4
    seed: int = 9

    def as_params(self) -> dict[str, object]:
        return asdict(self)


Metric = Callable[..., float | bool]


def compile_program(
    program: dspy.Module,
    *,
    trainset: Sequence[dspy.Example],
    valset: Sequence[dspy.Example],
    metric: Metric,
    config: OptimizerConfig,
    prompt_model: dspy.LM | None = None,
    task_model: dspy.LM | None = None,
) -> dspy.Module:
    """The optimizer of `config.name` over a copy of `program`; the result carries `score` (validation, 0-100 as
    dspy.Evaluate reports it) and, from MIPROv2, `trial_logs`.

    `metric(example, prediction, trace=None)` gets DSPy's trace argument: with a trace (bootstrapping) it should return
    whether the score reaches `config.metric_threshold` (see `thresholded`).
    """
    trainset, valset = list(trainset), list(valset)
    try:
        if config.name == "miprov2":
            return _miprov2(program, trainset, valset, metric, config, prompt_model, task_model)
        if config.name == "gepa":
            optimizer = dspy.GEPA(
                metric=_feedback_metric(metric), max_metric_calls=config.max_metric_calls,
                reflection_lm=prompt_model or dspy.settings.lm, num_threads=config.num_threads, seed=config.seed,
            )  # fmt: skip
        else:
            optimizer = dspy.BootstrapFewShotWithRandomSearch(
                metric=metric, max_bootstrapped_demos=config.max_bootstrapped_demos,
                max_labeled_demos=config.max_labeled_demos, num_candidate_programs=config.num_candidates,
                num_threads=config.num_threads, metric_threshold=config.metric_threshold,
            )  # fmt: skip
        with dspy.context(lm=task_model or dspy.settings.lm):
            compiled = optimizer.compile(program, trainset=trainset, valset=valset)
    except AdapterParseError as error:
        # The optimizers' own calls (MIPROv2's proposals, GEPA's reflections) are not guarded the way evaluations are.
        raise CompileError(
            f"{config.name} stopped: the answer to {error.signature.__name__} could not be parsed "
            f"({(error.lm_response or '')[:60]!r}...)",
            "an answer cut off at max_tokens cannot be parsed: raise --prompt-max-tokens (the prompt model writes the "
            "instruction proposals and reflections) or use a larger --prompt-model",
        ) from None
    compiled.score = _validation_score(compiled, valset, metric, config, task_model)
    return compiled


def thresholded(score: Callable[[dspy.Example, dspy.Prediction], float], threshold: float) -> Metric:
    """A metric from a float score: the score when evaluating, score >= threshold when bootstrapping."""

    def metric(example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float | bool:
        value = score(example, prediction)
        return value if trace is None else value >= threshold

    return metric


def _miprov2(
    program: dspy.Module, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric,
    config: OptimizerConfig, prompt_model: dspy.LM | None, task_model: dspy.LM | None,
) -> dspy.Module:
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
        trainset=trainset,
        valset=valset,
        num_trials=config.num_trials,
        minibatch=len(valset) > MINIBATCH_SIZE,
        minibatch_size=MINIBATCH_SIZE,
        minibatch_full_eval_steps=config.minibatch_full_eval_steps,
        view_data_batch_size=config.view_data_batch_size,
    )


def _feedback_metric(metric: Metric) -> Callable[..., float]:
    """GEPA calls metrics with (gold, pred, trace, pred_name, pred_trace) and wants a float score."""

    def gepa_metric(gold: dspy.Example, pred: dspy.Prediction, trace: object = None, pred_name: str | None = None,
                    pred_trace: object = None) -> float:
        return float(metric(gold, pred))

    return gepa_metric


def _validation_score(
    program: dspy.Module, valset: list[dspy.Example], metric: Metric, config: OptimizerConfig,
    task_model: dspy.LM | None,
) -> float:
    """The compiled program's validation score. The optimizer made these same calls: they come from DSPy's cache."""
    evaluate = dspy.Evaluate(devset=valset, metric=metric, num_threads=config.num_threads, display_progress=False,
                             max_errors=len(valset) + 1, provide_traceback=False)
    with dspy.context(lm=task_model or dspy.settings.lm):
        return float(evaluate(program).score)
