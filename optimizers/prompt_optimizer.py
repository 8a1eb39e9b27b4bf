"""Every component's prompt optimizer: one of DSPy's optimizers as a teleprompter, its settings in a config of its own.

`MIPROv2Config` (default; the papers' optimizer), `GEPAConfig` (DSPy's reflective optimizer; the prompt model
reflects) and `BootstrapRSConfig` (BootstrapFewShotWithRandomSearch: demo sets only, the cheap baseline). A
`PromptOptimizer` compiles a copy of its student with the optimizer its config is for and records what it tried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

import dspy
from dspy.teleprompt import Teleprompter
from dspy.utils.exceptions import AdapterParseError

from prefcraft.errors import CompileError

MINIBATCH_SIZE = 35  # MIPROv2's default; smaller valsets are evaluated whole
OptimizerName = Literal["miprov2", "gepa", "bootstrap_rs"]
Metric = Callable[..., float]
"""A compile metric: `metric(example, prediction, trace=None)` is the prediction's score."""


class _Params:
    """The optimizer's name and options, as a compile logs and saves them."""

    name: ClassVar[OptimizerName]

    def as_params(self) -> dict[str, object]:
        return {"name": self.name, **asdict(self)}


@dataclass
class MIPROv2Config(_Params):
    """MIPROv2 and its budget. Defaults are SynthesizeMe's paper budget (Appendix F); embedded demos use a much smaller
    one.

    Search: `num_candidates` instruction candidates and demo sets, `num_trials` Optuna trials, `view_data_batch_size`
    examples per data-summary call, `minibatch_full_eval_steps` between full evaluations (minibatches of
    MINIBATCH_SIZE once the valset is larger).
    Demos: `max_bootstrapped_demos` (>= 1 in DSPy 3.4.1) and `max_labeled_demos` per predictor; a bootstrapped trace
    counts as a success when its score reaches `metric_threshold`.
    Runtime: `num_threads` parallel calls; `seed` fixes the optimizer's sampling (commands set it from `settings.seed`).
    """

    name: ClassVar[OptimizerName] = "miprov2"
    num_candidates: int = 20
    num_trials: int = 30
    max_bootstrapped_demos: int = 10
    max_labeled_demos: int = 6
    view_data_batch_size: int = 1
    minibatch_full_eval_steps: int = 3
    metric_threshold: float = 0.5
    num_threads: int = 4
    seed: int = 9

    def optimize(self, student: dspy.Module, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric,
                 prompt_model: dspy.LM | None, task_model: dspy.LM | None) -> dspy.Module:
        optimizer = dspy.MIPROv2(
            metric=thresholded(metric, self.metric_threshold), prompt_model=prompt_model, task_model=task_model,
            auto=None, num_candidates=self.num_candidates, max_bootstrapped_demos=self.max_bootstrapped_demos,
            max_labeled_demos=self.max_labeled_demos, num_threads=self.num_threads,
            seed=self.seed,  # here, not in compile(): MIPROv2.compile reads seed=0 as unset
            verbose=False,
        )  # fmt: skip
        return optimizer.compile(
            student, trainset=trainset, valset=valset, num_trials=self.num_trials,
            minibatch=len(valset) > MINIBATCH_SIZE, minibatch_size=MINIBATCH_SIZE,
            minibatch_full_eval_steps=self.minibatch_full_eval_steps, view_data_batch_size=self.view_data_batch_size,
        )  # fmt: skip


@dataclass
class GEPAConfig(_Params):
    """GEPA: the prompt model reflects on the program's traces and rewrites its instructions.

    Budget: `max_metric_calls` metric calls in all (its one budget option).
    Runtime: `num_threads` parallel calls; `seed` fixes its sampling (commands set it from `settings.seed`).
    """

    name: ClassVar[OptimizerName] = "gepa"
    max_metric_calls: int = 400
    num_threads: int = 4
    seed: int = 9

    def optimize(self, student: dspy.Module, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric,
                 prompt_model: dspy.LM | None, task_model: dspy.LM | None) -> dspy.Module:
        optimizer = dspy.GEPA(
            metric=_feedback_metric(metric), max_metric_calls=self.max_metric_calls,
            reflection_lm=prompt_model or dspy.settings.lm, num_threads=self.num_threads, seed=self.seed,
        )  # fmt: skip
        with dspy.context(lm=task_model or dspy.settings.lm):
            return optimizer.compile(student, trainset=trainset, valset=valset)


@dataclass
class BootstrapRSConfig(_Params):
    """BootstrapFewShotWithRandomSearch: demo sets only, each scored on the whole valset.

    Search: `num_candidates` random demo sets (beside zero-shot, labeled-only and unshuffled ones).
    Demos: `max_bootstrapped_demos` and `max_labeled_demos` per predictor; a bootstrapped trace counts as a success when
    its score reaches `metric_threshold`.
    Runtime: `num_threads` parallel calls (its sampling is seeded by each candidate's index).
    """

    name: ClassVar[OptimizerName] = "bootstrap_rs"
    num_candidates: int = 20
    max_bootstrapped_demos: int = 10
    max_labeled_demos: int = 6
    metric_threshold: float = 0.5
    num_threads: int = 4

    def optimize(self, student: dspy.Module, trainset: list[dspy.Example], valset: list[dspy.Example], metric: Metric,
                 prompt_model: dspy.LM | None, task_model: dspy.LM | None) -> dspy.Module:
        optimizer = dspy.BootstrapFewShotWithRandomSearch(
            metric=thresholded(metric, self.metric_threshold), max_bootstrapped_demos=self.max_bootstrapped_demos,
            max_labeled_demos=self.max_labeled_demos, num_candidate_programs=self.num_candidates,
            num_threads=self.num_threads,
        )  # fmt: skip
        with dspy.context(lm=task_model or dspy.settings.lm):
            return optimizer.compile(student, trainset=trainset, valset=valset)


OptimizerConfig = MIPROv2Config | GEPAConfig | BootstrapRSConfig
CONFIGS: dict[OptimizerName, type[OptimizerConfig]] = {
    config.name: config for config in (MIPROv2Config, GEPAConfig, BootstrapRSConfig)
}


@dataclass
class CompileRecord:
    """What a compile tried: the optimizer and its settings, the compiled program's validation score (0-100, as
    dspy.Evaluate reports it) and, from MIPROv2, its trial logs (trial number -> what the trial evaluated)."""

    optimizer: OptimizerName
    params: dict[str, object]
    validation_score: float
    trial_logs: dict[int, dict[str, Any]] = field(default_factory=dict)


class PromptOptimizer(Teleprompter):
    """Compiles a program's prompts (instructions and demos) with the DSPy optimizer its config is for.

    `metric(example, prediction, trace=None)` is a score; when an optimizer bootstraps demos (MIPROv2, bootstrap_rs),
    a trace counts as a success when its score reaches the config's `metric_threshold`. The prompt model proposes
    instructions (MIPROv2) or reflects (GEPA); the task model runs the program (both default to the context's LM).
    """

    def __init__(self, metric: Metric, config: OptimizerConfig, *, prompt_model: dspy.LM | None = None,
                 task_model: dspy.LM | None = None):
        super().__init__()
        self.metric = metric
        self.config = config
        self.prompt_model = prompt_model
        self.task_model = task_model

    def compile(
        self, student: dspy.Module, *, trainset: Sequence[dspy.Example], valset: Sequence[dspy.Example]
    ) -> dspy.Module:
        """A compiled copy of `student`; its `compile_record` attribute is the compile's `CompileRecord`. The student
        itself is left as it was."""
        trainset, valset = list(trainset), list(valset)
        compiled = self._optimize(student.deepcopy(), trainset, valset)
        compiled.compile_record = CompileRecord(
            self.config.name, self.config.as_params(), self._validation_score(compiled, valset),
            getattr(compiled, "trial_logs", {}),
        )  # fmt: skip
        return compiled

    def _optimize(self, student: dspy.Module, trainset: list[dspy.Example], valset: list[dspy.Example]) -> dspy.Module:
        try:
            return self.config.optimize(student, trainset, valset, self.metric, self.prompt_model, self.task_model)
        except AdapterParseError as error:
            # The optimizers' own calls (MIPROv2's proposals, GEPA's reflections) are not guarded as evaluations are.
            raise CompileError(
                f"{self.config.name} stopped: the answer to {error.signature.__name__} could not be parsed "
                f"({(error.lm_response or '')[:60]!r}...)",
                "an answer cut off at max_tokens cannot be parsed: raise --prompt-max-tokens (the prompt model writes "
                "the instruction proposals and reflections) or use a larger --prompt-model",
            ) from None

    def _validation_score(self, program: dspy.Module, valset: list[dspy.Example]) -> float:
        """The compiled program's validation score. The optimizer made these same calls: DSPy's cache answers them."""
        evaluate = dspy.Evaluate(devset=valset, metric=self.metric, num_threads=self.config.num_threads,
                                 display_progress=False, max_errors=len(valset) + 1, provide_traceback=False)
        with dspy.context(lm=self.task_model or dspy.settings.lm):
            return float(evaluate(program).score)


def thresholded(score: Metric, threshold: float) -> Metric:
    """A bootstrapping metric from a score: the score when evaluating, score >= threshold with a trace."""

    def metric(example: dspy.Example, prediction: dspy.Prediction, trace: object = None) -> float | bool:
        value = score(example, prediction)
        return value if trace is None else value >= threshold

    return metric


def _feedback_metric(metric: Metric) -> Callable[..., float]:
    """GEPA calls metrics with (gold, pred, trace, pred_name, pred_trace) and wants a float score."""

    def gepa_metric(gold: dspy.Example, pred: dspy.Prediction, trace: object = None, pred_name: str | None = None,
                    pred_trace: object = None) -> float:
        return float(metric(gold, pred))

    return gepa_metric
