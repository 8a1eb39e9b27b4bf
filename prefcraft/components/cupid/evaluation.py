"""`prefcraft cupid evaluate`: CUPID's inference and generation tasks on held-out instances (`split`: the test
personas by default, or every instance with no persona split, as the paper's tables). One MLflow run.

Inference: each inferrer (uncompiled, and the compiled one when there is one) infers a preference per instance from
the dialogues and the request; `PreferenceMatch` grades it on the judge model (decomposer once, matcher twice); the
report pools the matched counts (micro P / R / F1) overall and per instance type, with per-instance means, each with a
95% bootstrap interval over instances. Generation: the task model answers each request with no preference (the
`baseline`), the inferred preference (of the last inferrer: the compiled one, if any) and the gold preference (the
ceiling); the judge scores each 1-10 against the gold preference and checklist (the reference code's prompt, or the
paper's); the report gives the mean score over all instances and per instance type (Table 3's columns), each with a
95% bootstrap interval over responses. Every step runs its instances in parallel through `evaluate_program`, and each
inferrer and response method is a child run. Results go to JSONL under the output directory.

The instances are read and chosen before any model starts (`load_evaluated`); the runner then opens the step's MLflow
run ("cupid-evaluate", its params `evaluation_params`), and the work records into it (`evaluate_chosen`).

Failures count as in the reference code (see `prefcraft.components.cupid.metrics`): a failed inference is left out of
the scores; when grading fails, the inferred preference's checklist is asked for again (the decomposer alone, a cache
hit when the grading got that far) so that a failed matcher keeps the inferred items in the precision denominator,
while a failed decomposition counts as a failed inference (the reference decomposes inside inference). A failed or
unparseable judge score counts 0; a failed generation is left out. A prompt over the context window is the reference's
one exception (`context_overflow = "zero"`, the default): that inference scores an empty checklist (recall 0) and that
response 0, both kept in the scores; `"leave-out"` leaves them out instead. Per instance type the same rules apply to
that type's instances. Every failure is written with its reason (`prefcraft.engine.item_failures.failure_reason`) and
counted beside the figures; none stops the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dspy

from prefcraft.components.component import StepRun
from prefcraft.components.cupid.data import (
    INSTANCE_TYPES,
    CupidInstance,
    load_instances,
    split_by_persona,
)
from prefcraft.components.cupid.metrics import (
    MatchReport,
    ResponseScores,
    judge_score,
    match_report,
    response_scores,
)
from prefcraft.components.cupid.options import ContextOverflow, DataOptions, JudgingOptions
from prefcraft.components.cupid.results import (
    UNPARSEABLE_SCORE,
    EvaluationOutcome,
    InferenceOutcome,
    InstanceResult,
    ResponseOutcome,
    ResponseResult,
)
from prefcraft.engine.evaluation import StepCost, run_pipeline_step
from prefcraft.engine.item_failures import CONTEXT_OVERFLOW, FailureLog, reason_kind
from prefcraft.errors import ConfigError
from prefcraft.optimizers.artifacts import shipped_compiled
from prefcraft.optimizers.cupid import PROGRAM_NAME, load_inferrer
from prefcraft.programs.cupid import (
    DECOMPOSER_MAX_TOKENS,
    ChecklistMatch,
    JudgePrompt,
    PreferenceInferrer,
    PreferenceMatch,
    ResponseGenerator,
    ResponseJudge,
    SummaryResponder,
    decomposer,
)
from prefcraft.settings import Role, Settings
from prefcraft.tracking.runs import StepTracker, data_digest, model_params

logger = logging.getLogger(__name__)

FROM_SESSIONS = {"sessions": ResponseGenerator, "summaries": SummaryResponder,
                 "summaries-per-session": lambda: SummaryResponder(per_session=True)}
"""The response methods that read the prior sessions, and the program that answers for each."""
NOT_SCORED = 0.0
Selected = tuple[list[CupidInstance], int]
Ran = tuple[dspy.Example, dspy.Prediction | None, str | None]
"""An example, its prediction (None: the call failed), and why the call failed."""


@dataclass(frozen=True)
class Evaluated:
    """What an evaluation reads before any model starts (`load_evaluated`, or `evaluated` for given instances): the
    instances it evaluates, the invalid rows skipped, and in the oracle setting how many instances were left out; then
    the inferrers it compares, chosen once (`chosen_inferrers`) for both the run's params and the work."""

    instances: list[CupidInstance]
    skipped: int = 0
    oracle_left_out: int | None = None
    """In the oracle setting, the instances with no prior session that shares their current preference; None outside
    it."""
    inferrers: dict[str, dspy.Module] = field(default_factory=dict, compare=False, repr=False)
    """Filled by `chosen_inferrers`, the first time the run's params or the work asks."""


def load_evaluated(options: JudgingOptions) -> Evaluated:
    """The instances the evaluation reads (`select_instances`, then `evaluated`), before any model starts."""
    instances, skipped = select_instances(options, options.split)
    return evaluated(options, instances, skipped)


def evaluation_params(options: JudgingOptions, run: StepRun) -> dict[str, Any]:
    """The evaluate run's params: the data and the instances `load_evaluated` read (`run.loaded`), the inferrers
    compared (`chosen_inferrers`), how the responses are judged and failures counted, and the models."""
    chosen: Evaluated = run.loaded
    session = run.session
    return {"program": "cupid", "data": str(options.source), "data_digest": data_digest(options.source),
            "split": options.split, "instances": len(chosen.instances), "skipped_rows": chosen.skipped,
            "sessions": "oracle" if options.oracle_sessions else "all", "oracle_left_out": chosen.oracle_left_out,
            "inferrers": list(chosen_inferrers(session, options, chosen)), "judge_prompt": options.judge_prompt,
            "context_overflow": options.context_overflow, **model_params(session)}


def evaluate(options: JudgingOptions, run: StepRun) -> EvaluationOutcome:
    return evaluate_chosen(run.session, run.tracker, options, run.loaded)


def select_instances(data: DataOptions, split: str) -> Selected:
    """The instances of `split` (train / val / test by persona, or all), and how many invalid rows were skipped."""
    loaded = load_instances(data.source, skip_invalid=data.skip_invalid)
    for error in loaded.skipped:
        logger.warning("skipped: %s", error)
    if split == "all":
        chosen = loaded.instances
    else:
        parts = split_by_persona(loaded.instances, val_personas=data.val_personas, test_personas=data.test_personas,
                                 source=data.source)
        chosen = getattr(parts, split)
    return chosen[: data.max_instances], len(loaded.skipped)


def evaluated(options: JudgingOptions, instances: Sequence[CupidInstance], skipped: int = 0) -> Evaluated:
    """The instances to evaluate: all of them, or in the oracle setting those with a prior session that shares their
    current preference (`_with_relevant_sessions`); none is a ConfigError."""
    if not instances:
        raise ConfigError(f"no instances in the {options.split} split", "use --split all or fewer validation personas")
    if not options.oracle_sessions:
        return Evaluated(list(instances), skipped)
    kept, without_relevant = _with_relevant_sessions(instances)
    return Evaluated(kept, skipped, without_relevant)


def chosen_inferrers(session: Settings, options: JudgingOptions, chosen: Evaluated) -> dict[str, dspy.Module]:
    """The inferrers the evaluation of `chosen` compares (`_inferrers`), built once: the run's params name them before
    the work runs them, and a compiled inferrer is read (and said to be) only once."""
    if not chosen.inferrers:
        chosen.inferrers.update(_inferrers(session, options))
    return chosen.inferrers


def evaluate_instances(
    session: Settings, tracker: StepTracker, options: JudgingOptions, instances: Sequence[CupidInstance],
    skipped: int = 0,
) -> EvaluationOutcome:
    """The evaluation of `instances` (`evaluated`, then `evaluate_chosen`), for a caller that has them in hand (a
    benchmark, a test); it opens no run: the caller opens the one it records in."""
    return evaluate_chosen(session, tracker, options, evaluated(options, instances, skipped))


def evaluate_chosen(
    session: Settings, tracker: StepTracker, options: JudgingOptions, chosen: Evaluated
) -> EvaluationOutcome:
    """Each inferrer, then each response method, on the chosen instances; each a child run of the run `tracker`
    records in (the evaluate run, `evaluation_params`), which gets the result files."""
    examples = [instance.example(options.oracle_sessions) for instance in chosen.instances]
    inferrers = chosen_inferrers(session, options, chosen)
    inference = []
    for name, inferrer in inferrers.items():
        inference.append(infer_and_match(session, tracker, name, inferrer, examples, options.context_overflow))
        _write_inference(tracker, options.output_dir, inference[-1])
    inferred = [result.preference or "" for result in inference[-1].results]  # the compiled one, if any
    responses = [respond_and_judge(session, tracker, method, examples, inferred, options.judge_prompt,
                                   options.context_overflow)
                 for method in options.responses]
    if responses:
        rows = [asdict(result) for response in responses for result in response.results]
        tracker.write_results(options.output_dir / "responses.jsonl", rows)
    return EvaluationOutcome(str(options.source), len(chosen.instances), chosen.skipped, options.split, inference,
                             responses, options.output_dir, chosen.oracle_left_out, options.judge_prompt,
                             options.context_overflow)


def _with_relevant_sessions(instances: Sequence[CupidInstance]) -> tuple[list[CupidInstance], int]:
    """The instances with at least one prior session that shares the current preference, and how many had none."""
    kept = [instance for instance in instances if instance.oracle_interactions()]
    if not kept:
        raise ConfigError("no instance has a prior session with its current preference, so the oracle setting has "
                          "nothing to give", "evaluate without --oracle-sessions")
    if len(kept) < len(instances):
        logger.warning("oracle setting: %d instance(s) left out, no prior session shares their current preference",
                       len(instances) - len(kept))
    return kept, len(instances) - len(kept)


def infer_and_match(
    session: Settings, tracker: StepTracker, name: str, inferrer: dspy.Module, examples: Sequence[dspy.Example],
    context_overflow: ContextOverflow = "zero",
) -> InferenceOutcome:
    """One inferrer on every example (task model), then its preferences graded (judge model). A child run."""
    with tracker.child(f"infer-{name}", {"inferrer": name}):
        inferred, infer_cost = _run_step(session, inferrer, examples, "task")
        gradings, redecomposed, grading_costs = _grade(session, inferred)
        results = [_instance_result(ran, grading, checklist, context_overflow)
                   for ran, grading, checklist in zip(inferred, gradings, redecomposed, strict=True)]
        outcome = InferenceOutcome(
            name=name,
            overall=_report(results, session.seed),
            by_type=_by_type(results, _report, session.seed),
            results=results,
            costs={"infer": infer_cost, **grading_costs},
        )
        by_type = {metric: value for kind, report in outcome.by_type.items()
                   for metric, value in report.as_metrics(f"{kind}_").items()}
        tracker.log_metrics({**outcome.overall.as_metrics(), **by_type, **_cost_metrics(outcome.costs)})
    return outcome


def _by_type(results: Sequence[Any], summarize: Callable[[list[Any], int], Any], seed: int) -> dict[str, Any]:
    """`summarize(results of one instance type, seed)` for each type the results hold, in INSTANCE_TYPES' order."""
    return {kind: summarize([result for result in results if result.instance_type == kind], seed)
            for kind in INSTANCE_TYPES if any(result.instance_type == kind for result in results)}


def respond_and_judge(
    session: Settings, tracker: StepTracker, method: str, examples: Sequence[dspy.Example], inferred: Sequence[str],
    judge_prompt: JudgePrompt, context_overflow: ContextOverflow = "zero",
) -> ResponseOutcome:
    """Responses of one method (task model) judged 1-10 against the gold preference and checklist (judge model),
    scored over all instances and per instance type. A child run."""
    with tracker.child(f"respond-{method}", {"response_method": method}):
        requests = [_response_example(example, method, preference) for example, preference in
                    zip(examples, inferred, strict=True)]
        generator = FROM_SESSIONS.get(method, ResponseGenerator)()
        generated, generate_cost = _run_step(session, generator, requests, "task")
        to_judge = [
            dspy.Example(request=example.current_request, response=prediction.response,
                         preference=example.gold_preference, checklist=example.gold_checklist,
                         ).with_inputs("request", "response", "preference", "checklist")
            for example, (_, prediction, _) in zip(examples, generated, strict=True) if prediction is not None
        ]
        judged, judge_cost = _run_step(session, ResponseJudge(judge_prompt), to_judge, "judge", _judge_score)
        judgments = _aligned([prediction is not None for _, prediction, _ in generated], judged)
        results = [_response_result(ran, method, judgment, context_overflow)
                   for ran, judgment in zip(generated, judgments, strict=True)]
        outcome = ResponseOutcome(
            method=method,
            overall=_response_scores(results, session.seed),
            by_type=_by_type(results, _response_scores, session.seed),
            results=results,
            costs={"generate": generate_cost, "judge": judge_cost},
        )
        by_type = {metric: value for kind, scores in outcome.by_type.items()
                   for metric, value in scores.as_metrics(f"{kind}_").items()}
        tracker.log_metrics({**outcome.overall.as_metrics(), **by_type, **_cost_metrics(outcome.costs)})
    return outcome


def _grade(
    session: Settings, inferred: Sequence[Ran]
) -> tuple[list[Ran | None], list[Ran | None], dict[str, StepCost]]:
    """The inferred preferences graded on the judge model, and for each whose grading failed, its checklist from the
    decomposer alone, so that a failed matcher is told from a failed decomposition; both aligned with `inferred`
    (None where the step did not run)."""
    was_inferred = [prediction is not None for _, prediction, _ in inferred]
    to_grade = [_grading_example(example, prediction) for example, prediction, _ in inferred
                if prediction is not None]
    cap = decomposer_max_tokens(session)
    graded, match_cost = _run_step(session, PreferenceMatch(cap), to_grade, "judge")
    gradings = _aligned(was_inferred, graded)
    ungraded = [dspy.Example(preference=example.preference).with_inputs("preference")
                for example, prediction, _ in graded if prediction is None]
    decomposed, decompose_cost = _run_step(session, decomposer(cap), ungraded, "judge")
    redecomposed = _aligned([done and grading is not None and grading[1] is None
                             for done, grading in zip(was_inferred, gradings, strict=True)], decomposed)
    return gradings, redecomposed, {"match": match_cost, "redecompose": decompose_cost}


def decomposer_max_tokens(session: Settings) -> int:
    """The reference's cap on the decomposer's replies, or the judge model's own `max_tokens` when that is lower."""
    return min(session.model_for("judge").max_tokens, DECOMPOSER_MAX_TOKENS)


def _run_step(
    session: Settings, program: dspy.Module, examples: Sequence[dspy.Example], role: Role,
    metric: Callable[[dspy.Example, dspy.Prediction], float] | None = None,
) -> tuple[list[Ran], StepCost]:
    """`run_pipeline_step`, each failed call with its reason; a failure never stops the step."""
    log = FailureLog(program)
    results, cost = run_pipeline_step(session, log, examples, metric or _unscored, role)
    return [(example, prediction, None if prediction is not None else log.reason(example))
            for example, prediction, _ in results], cost


def _inferrers(session: Settings, options: JudgingOptions) -> dict[str, dspy.Module]:
    """The uncompiled inferrer of each variant, then the compiled one beside the uncompiled one of its variant."""
    inferrers: dict[str, dspy.Module] = {variant: PreferenceInferrer(variant) for variant in options.inferrers}
    compiled = options.compiled or (shipped_compiled(PROGRAM_NAME, session.task.model) if options.use_shipped
                                    else None)
    if compiled is None and options.use_shipped:
        logger.info("no compiled inferrer ships for %s: uncompiled inferrers only", session.task.model)
    if compiled is not None:
        program, metadata = load_inferrer(compiled)
        inferrers.setdefault(program.variant, PreferenceInferrer(program.variant))
        inferrers[f"{program.variant} compiled"] = program
        logger.info("compiled inferrer %s (compiled on %s)", compiled, metadata.get("model"))
    return inferrers


def overflowed(reason: str | None) -> bool:
    """Whether a call failed for a prompt over the context window, the one failure the reference scores."""
    return reason is not None and reason_kind(reason) == CONTEXT_OVERFLOW


def _unscored(example: dspy.Example, prediction: dspy.Prediction) -> float:
    return NOT_SCORED  # scores come from a later step on another model


def _judge_score(example: dspy.Example, prediction: dspy.Prediction) -> float:
    return judge_score(prediction.score) or 0.0


def _response_result(
    ran: Ran, method: str, judgment: Ran | None, context_overflow: ContextOverflow
) -> ResponseResult:
    """A response's score as the reference counts it: 0 when judging failed or its score is no number, and 0 when the
    generation's prompt was over the context window (under the reference's rule); any other failed generation is left
    out (None)."""
    request, generated, generation_failure = ran
    instance = (request.instance_id, request.instance_type, method)
    if generated is None or judgment is None:
        scored = overflowed(generation_failure) and context_overflow == "zero"
        return ResponseResult(*instance, None, 0.0 if scored else None, "generation", generation_failure)
    _, judged, judge_failure = judgment
    if judged is None:
        return ResponseResult(*instance, generated.response, 0.0, "judging", judge_failure)
    score = judge_score(judged.score)
    if score is None:
        return ResponseResult(*instance, generated.response, 0.0, UNPARSEABLE_SCORE,
                              f"the judge's score reads {judged.score!r}")
    return ResponseResult(*instance, generated.response, score)


def _response_scores(results: Sequence[ResponseResult], seed: int) -> ResponseScores:
    """The mean score of `results` as the reference aggregates it: a failed or unparseable judgment scores 0 and
    stays in the mean, and so does a generation over the context window (under the reference's rule); any other
    failed generation is left out; each counted."""
    failed_generations = [result for result in results if result.failed == "generation"]
    return response_scores([result.score if result.failed is None else None for result in results
                            if result.failed in (None, UNPARSEABLE_SCORE)],
                           judge_failures=sum(result.failed == "judging" for result in results),
                           context_overflows=sum(result.score is not None for result in failed_generations),
                           generation_failures=sum(result.score is None for result in failed_generations), seed=seed)


def _aligned(ran: Sequence[bool], results: Sequence[Ran]) -> list[Ran | None]:
    """A later step's results, which ran only where `ran` is true, aligned with the earlier step's (None: not run)."""
    later = iter(results)
    return [next(later) if did else None for did in ran]


def _grading_example(example: dspy.Example, prediction: dspy.Prediction) -> dspy.Example:
    return dspy.Example(preference=prediction.preference, gold_preference=example.gold_preference,
                        gold_checklist=example.gold_checklist).with_inputs("preference", "gold_preference",
                                                                           "gold_checklist")


def _instance_result(
    ran: Ran, grading: Ran | None, redecomposed: Ran | None, context_overflow: ContextOverflow
) -> InstanceResult:
    """An instance's match: the grader's; after a failed matcher, every item Not covered; after a failed inference
    or decomposition, nothing (the instance is left out of the scores), but for a prompt over the context window under
    the reference's rule: an empty checklist, every gold item Not covered."""
    example, inferred, inference_failure = ran
    common = {"instance_id": example.instance_id, "instance_type": example.instance_type,
              "preference": getattr(inferred, "preference", None),
              "used_sessions": getattr(inferred, "used_sessions", None)}
    if inferred is None or grading is None:
        failed, reason = "inference", inference_failure
    elif grading[1] is None and (redecomposed is None or redecomposed[1] is None):
        failed, reason = "decomposition", redecomposed[2] if redecomposed is not None else None
    elif grading[1] is not None:
        return _scored(common, grading[1].checklist, grading[1].match, None, None)
    else:
        checklist = [item for item in redecomposed[1].checklist if item.strip()]  # as PreferenceMatch drops blanks
        match = ChecklistMatch.unmatched(len(checklist), len(example.gold_checklist))
        return _scored(common, checklist, match, "matching", grading[2])
    if overflowed(reason) and context_overflow == "zero":
        return _scored(common, [], ChecklistMatch([], [0.0] * len(example.gold_checklist)), failed, reason)
    return InstanceResult(**common, checklist=None, predicted_coverage=[], true_coverage=[], precision=None,
                          recall=None, f1=None, missing_labels=0, failed=failed, reason=reason)


def _scored(
    common: dict[str, Any], checklist: list[str], match: ChecklistMatch, failed: str | None, reason: str | None
) -> InstanceResult:
    return InstanceResult(**common, checklist=checklist, predicted_coverage=match.predicted_coverage,
                          true_coverage=match.true_coverage, precision=match.precision, recall=match.recall,
                          f1=match.f1, missing_labels=match.missing_labels, failed=failed, reason=reason)


def _match_of(result: InstanceResult) -> ChecklistMatch:
    return ChecklistMatch(result.predicted_coverage, result.true_coverage, result.missing_labels)


def _report(results: Sequence[InstanceResult], seed: int) -> MatchReport:
    scored = [result for result in results if result.precision is not None]
    return match_report([_match_of(result) for result in scored], seed=seed,
                        inference_failures=len(results) - len(scored),
                        context_overflows=sum(result.failed in ("inference", "decomposition") for result in scored),
                        matcher_failures=sum(result.failed == "matching" for result in scored))


def _response_example(example: dspy.Example, method: str, inferred: str) -> dspy.Example:
    """The generator's inputs for `method`, with the instance id kept for the results."""
    request = dspy.Example(request=example.current_request, instance_id=example.instance_id,
                           instance_type=example.instance_type)
    if method in FROM_SESSIONS:
        return request.copy(sessions=example.sessions).with_inputs("request", "sessions")
    preference = {"baseline": "", "inferred": inferred, "gold": example.gold_preference}[method]
    return request.copy(preference=preference).with_inputs("request", "preference")


def _cost_metrics(costs: dict[str, StepCost]) -> dict[str, float]:
    return {name: value for step, cost in costs.items() for name, value in cost.as_metrics(f"{step}_").items()}


def _write_inference(tracker: StepTracker, output_dir: Path, inference: InferenceOutcome) -> None:
    slug = inference.name.replace(" ", "-")
    tracker.write_results(output_dir / f"inference-{slug}.jsonl", map(asdict, inference.results))
