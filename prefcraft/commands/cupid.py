"""`prefcraft cupid evaluate`: CUPID's inference and generation tasks on held-out instances. One MLflow run.

Inference: each inferrer (uncompiled, and the compiled one when there is one) infers a preference per instance from
the dialogues and the request; `PreferenceMatch` grades it on the judge model (decomposer once, matcher twice); the
report pools the matched counts (micro P / R / F1) overall and per instance type, with per-instance means, each with a
95% bootstrap interval over instances. Generation: the task model answers each request with no preference, the
inferred preference (of the first inferrer) and the gold preference (the ceiling); the judge scores each 1-10 against
the gold preference and checklist. Every step runs its instances in parallel through `evaluate_program`, and each
inferrer and response method is a child run. Results go to JSONL under the output directory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import dspy

from prefcraft.errors import ConfigError
from prefcraft.evaluation import StepCost, run_step
from prefcraft.files import write_jsonl_atomic
from prefcraft.loaders.cupid import INSTANCE_TYPES, SAMPLE_INSTANCES, CupidInstance, load_instances, split_by_persona
from prefcraft.metrics.cupid import ChecklistMatch, MatchReport, match_report
from prefcraft.metrics.stats import Estimate, bootstrap_mean
from prefcraft.optimizers.artifacts import shipped_compiled
from prefcraft.optimizers.cupid import PROGRAM_NAME, load_inferrer
from prefcraft.programs.cupid import (
    InferrerVariant,
    PreferenceInferrer,
    PreferenceMatch,
    ResponseGenerator,
    ResponseJudge,
)
from prefcraft.runtime import model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, log_json, log_metrics, model_params, start_tracking, tracked_run

logger = logging.getLogger(__name__)

RUNS = Path("runs/cupid")
RESPONSE_METHODS = ("none", "sessions", "inferred", "gold")
DEFAULT_RESPONSE_METHODS = ("none", "inferred", "gold")
NOT_SCORED = 0.0


@dataclass
class CupidData:
    """Which instances a command reads: a file or hub dataset, split by persona."""

    source: str | Path = SAMPLE_INSTANCES
    val_personas: int = 2
    test_personas: int = 2
    skip_invalid: bool = False
    max_instances: int | None = None


@dataclass
class EvaluationJob:
    data: CupidData = field(default_factory=CupidData)
    variants: Sequence[InferrerVariant] = ("all",)
    compiled: Path | None = None
    """A compiled inferrer to compare with the uncompiled ones (default: the one shipped for the task model)."""
    use_shipped: bool = True
    split: str = "test"
    response_methods: Sequence[str] = DEFAULT_RESPONSE_METHODS
    """Generation methods to run and judge (none of them: inference only)."""
    output_dir: Path = RUNS


@dataclass
class InstanceResult:
    instance_id: str
    instance_type: str
    preference: str | None
    used_sessions: list[int] | None
    checklist: list[str] | None
    predicted_coverage: list[float]
    true_coverage: list[float]
    precision: float
    recall: float
    f1: float
    missing_labels: int
    failed: str | None
    """None, or the step that failed: "inference" or "matching"."""


@dataclass
class InferenceOutcome:
    name: str
    overall: MatchReport
    by_type: dict[str, MatchReport]
    results: list[InstanceResult]
    costs: dict[str, StepCost]


@dataclass
class ResponseResult:
    instance_id: str
    method: str
    response: str | None
    score: float | None
    """The judge's 1-10, or None when generation or judging failed."""


@dataclass
class ResponseOutcome:
    method: str
    score: Estimate
    """Mean judge score (1-10) with its interval; unscored responses are left out and counted in `failed`."""
    failed: int
    results: list[ResponseResult]
    costs: dict[str, StepCost]


@dataclass
class EvaluationOutcome:
    data: str
    instances: int
    skipped: int
    split: str
    inference: list[InferenceOutcome]
    responses: list[ResponseOutcome]
    results_dir: Path


def run_cupid_evaluation(settings: Settings, job: EvaluationJob, emit: Callable[[str], None]) -> EvaluationOutcome:
    """Load the data, bring the models up and evaluate; prints the summary table."""
    from prefcraft.cupid_report import format_evaluation

    instances, skipped = select_instances(job.data, job.split)
    with model_session(settings) as session:
        start_tracking(session)
        outcome = evaluate_instances(session, job, instances, skipped)
    emit(format_evaluation(outcome))
    return outcome


def select_instances(data: CupidData, split: str) -> tuple[list[CupidInstance], int]:
    """The instances of `split` (train / val / test by persona, or all), and how many invalid rows were skipped."""
    loaded = load_instances(data.source, skip_invalid=data.skip_invalid)
    for error in loaded.skipped:
        logger.warning("skipped: %s", error)
    if split == "all":
        chosen = loaded.instances
    else:
        parts = split_by_persona(loaded.instances, val_personas=data.val_personas, test_personas=data.test_personas)
        chosen = getattr(parts, split)
    return chosen[: data.max_instances], len(loaded.skipped)


def evaluate_instances(
    session: Settings, job: EvaluationJob, instances: Sequence[CupidInstance], skipped: int = 0
) -> EvaluationOutcome:
    if not instances:
        raise ConfigError(f"no instances in the {job.split} split", "use --split all or fewer validation personas")
    examples = [instance.example() for instance in instances]
    inferrers = _inferrers(session, job)
    params = {"program": "cupid", "data": str(job.data.source), "data_digest": data_digest(job.data.source),
              "split": job.split, "instances": len(instances), "skipped_rows": skipped,
              "inferrers": list(inferrers), **model_params(session)}
    with tracked_run("cupid-evaluate", params):
        inference = [infer_and_match(session, name, inferrer, examples) for name, inferrer in inferrers.items()]
        inferred = [result.preference or "" for result in inference[-1].results]  # the compiled one, if any
        responses = [respond_and_judge(session, method, examples, inferred) for method in job.response_methods]
        outcome = EvaluationOutcome(str(job.data.source), len(instances), skipped, job.split, inference, responses,
                                    job.output_dir)
        _write_results(outcome)
    return outcome


def infer_and_match(
    session: Settings, name: str, inferrer: dspy.Module, examples: Sequence[dspy.Example]
) -> InferenceOutcome:
    """One inferrer on every example (task model), then its preferences graded (judge model). A child run."""
    with tracked_run(f"infer-{name}", {"inferrer": name}, nested=True):
        inferred, infer_cost = run_step(session, inferrer, examples, _unscored, "task")
        to_grade = [_grading_example(example, prediction) for example, prediction, _ in inferred
                    if prediction is not None]
        graded, match_cost = run_step(session, PreferenceMatch(), to_grade, _unscored, "judge")
        matches = _aligned([prediction for _, prediction, _ in inferred], graded)
        results = [_instance_result(example, prediction, match)
                   for (example, prediction, _), match in zip(inferred, matches, strict=True)]
        outcome = InferenceOutcome(
            name=name,
            overall=_report(results, session.seed),
            by_type={kind: _report([r for r in results if r.instance_type == kind], session.seed)
                     for kind in INSTANCE_TYPES if any(r.instance_type == kind for r in results)},
            results=results,
            costs={"infer": infer_cost, "match": match_cost},
        )
        by_type = {metric: value for kind, report in outcome.by_type.items()
                   for metric, value in report.as_metrics(f"{kind}_").items()}
        log_metrics({**outcome.overall.as_metrics(), **by_type, **_cost_metrics(outcome.costs)})
        log_json([asdict(result) for result in results], f"inference-{name}.json")
    return outcome


def respond_and_judge(
    session: Settings, method: str, examples: Sequence[dspy.Example], inferred: Sequence[str]
) -> ResponseOutcome:
    """Responses of one method (task model) judged 1-10 against the gold preference and checklist (judge model)."""
    with tracked_run(f"respond-{method}", {"response_method": method}, nested=True):
        requests = [_response_example(example, method, preference) for example, preference in
                    zip(examples, inferred, strict=True)]
        generated, generate_cost = run_step(session, ResponseGenerator(), requests, _unscored, "task")
        to_judge = [
            dspy.Example(request=example.current_request, response=prediction.response,
                         preference=example.gold_preference, checklist=example.gold_checklist,
                         ).with_inputs("request", "response", "preference", "checklist")
            for example, (_, prediction, _) in zip(examples, generated, strict=True) if prediction is not None
        ]
        judged, judge_cost = run_step(session, ResponseJudge(), to_judge, _judge_score, "judge")
        judgments = _aligned([prediction for _, prediction, _ in generated], judged)
        results = [ResponseResult(request.instance_id, method, getattr(prediction, "response", None),
                                  float(judgment.score) if judgment is not None else None)
                   for (request, prediction, _), judgment in zip(generated, judgments, strict=True)]
        valid = [result.score for result in results if result.score is not None]
        outcome = ResponseOutcome(method, bootstrap_mean(valid, seed=session.seed), len(results) - len(valid), results,
                                  {"generate": generate_cost, "judge": judge_cost})
        log_metrics({"score": outcome.score.mean, "failed": float(outcome.failed), **_cost_metrics(outcome.costs)})
        log_json([asdict(result) for result in results], f"responses-{method}.json")
    return outcome



def _inferrers(session: Settings, job: EvaluationJob) -> dict[str, dspy.Module]:
    """The uncompiled inferrer of each variant, then the compiled one beside the uncompiled one of its variant."""
    inferrers: dict[str, dspy.Module] = {variant: PreferenceInferrer(variant) for variant in job.variants}
    compiled = job.compiled or (shipped_compiled(PROGRAM_NAME, session.task.model) if job.use_shipped else None)
    if compiled is not None:
        program, metadata = load_inferrer(compiled)
        inferrers.setdefault(program.variant, PreferenceInferrer(program.variant))
        inferrers[f"{program.variant} compiled"] = program
        logger.info("compiled inferrer %s (compiled on %s)", compiled, metadata.get("model"))
    return inferrers


def _unscored(example: dspy.Example, prediction: dspy.Prediction) -> float:
    return NOT_SCORED  # scores come from a later step on another model


def _judge_score(example: dspy.Example, prediction: dspy.Prediction) -> float:
    return float(prediction.score)


def _aligned(
    upstream: Sequence[dspy.Prediction | None], results: Sequence[tuple[dspy.Example, dspy.Prediction | None, float]]
) -> list[dspy.Prediction | None]:
    """A later step's predictions, which ran only where the earlier step succeeded, aligned with the earlier ones."""
    later = iter(results)
    return [next(later)[1] if prediction is not None else None for prediction in upstream]


def _grading_example(example: dspy.Example, prediction: dspy.Prediction) -> dspy.Example:
    return dspy.Example(preference=prediction.preference, gold_preference=example.gold_preference,
                        gold_checklist=example.gold_checklist).with_inputs("preference", "gold_preference",
                                                                           "gold_checklist")


def _instance_result(
    example: dspy.Example, inferred: dspy.Prediction | None, graded: dspy.Prediction | None
) -> InstanceResult:
    """An instance's match; a failed step scores nothing on the inferred side and Not covered on every gold item."""
    failed = "inference" if inferred is None else "matching" if graded is None else None
    match = graded.match if graded is not None else ChecklistMatch([], [0.0] * len(example.gold_checklist))
    return InstanceResult(
        instance_id=example.instance_id, instance_type=example.instance_type,
        preference=getattr(inferred, "preference", None), used_sessions=getattr(inferred, "used_sessions", None),
        checklist=getattr(graded, "checklist", None), predicted_coverage=match.predicted_coverage,
        true_coverage=match.true_coverage, precision=match.precision, recall=match.recall, f1=match.f1,
        missing_labels=match.missing_labels, failed=failed,
    )


def _match_of(result: InstanceResult) -> ChecklistMatch:
    return ChecklistMatch(result.predicted_coverage, result.true_coverage, result.missing_labels)


def _report(results: Sequence[InstanceResult], seed: int) -> MatchReport:
    return match_report([_match_of(result) for result in results], seed=seed,
                        failed=sum(result.failed is not None for result in results))


def _response_example(example: dspy.Example, method: str, inferred: str) -> dspy.Example:
    """The generator's inputs for `method`, with the instance id kept for the results."""
    request = dspy.Example(request=example.current_request, instance_id=example.instance_id)
    if method == "sessions":
        return request.copy(sessions=example.sessions).with_inputs("request", "sessions")
    preference = {"none": "", "inferred": inferred, "gold": example.gold_preference}[method]
    return request.copy(preference=preference).with_inputs("request", "preference")


def _cost_metrics(costs: dict[str, StepCost]) -> dict[str, float]:
    return {name: value for step, cost in costs.items() for name, value in cost.as_metrics(f"{step}_").items()}


def _write_results(outcome: EvaluationOutcome) -> None:
    for inference in outcome.inference:
        slug = inference.name.replace(" ", "-")
        write_jsonl_atomic(outcome.results_dir / f"inference-{slug}.jsonl", map(asdict, inference.results))
    if outcome.responses:
        rows = [asdict(result) for response in outcome.responses for result in response.results]
        write_jsonl_atomic(outcome.results_dir / "responses.jsonl", rows)
