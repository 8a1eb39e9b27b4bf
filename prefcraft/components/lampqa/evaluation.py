"""`prefcraft lampqa evaluate` (and the demo): LaMP-QA's methods answer held-out questions, the aspect judge scores.

Per method, two steps, each a `dspy.Evaluate` pass with questions in parallel: `answer` (the method's program on the
task model: retrieval, the planner for PlanPers, the answerer) and `judge` (one judge call per gold aspect of each
question, on the judge model). PlanPers' plan is judged on its own too (`coverage`: the share of the gold aspects its
plan covers, scored like an answer). `rag_random` is the paper's control (Table 2): RAG over another user's profile,
drawn at random (seeded) for each question from the profiles of the other questions evaluated. The runner opens the
step's MLflow run (`lampqa-evaluate`, its params `evaluation_params`); one child run per method; per-question results
go to `<output-dir>/lampqa-<method>.jsonl` and the summary to `<output-dir>/lampqa-summary.json`, both written
atomically and logged to their run.

A question whose answer or judgment fails (the server refused a prompt over its context, a reply that still does not
parse after its retries) scores 0, as the reference scores it, with its reason in the results and counted by kind in
the summary; the run goes on, unless a call timed out or the model's server no longer answers at all.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, get_args

import dspy

from prefcraft.components.component import StepRun
from prefcraft.components.lampqa.data import CONFIGS, LampQAQuestion, LoadedQuestions, load_questions
from prefcraft.components.lampqa.metrics import (
    QuestionResult,
    method_report,
    question_score,
    relative_gain,
)
from prefcraft.components.lampqa.options import DataOptions, Method, MethodOptions
from prefcraft.components.lampqa.results import BASELINE, EvaluationOutcome, MethodOutcome
from prefcraft.engine.evaluation import StepCost, run_pipeline_step
from prefcraft.engine.item_failures import failure_reason, is_item_failure
from prefcraft.engine.lm import check_reachable
from prefcraft.errors import ConfigError
from prefcraft.metrics.stats import bootstrap_mean
from prefcraft.optimizers.artifacts import shipped_compiled
from prefcraft.optimizers.lampqa import PROGRAM_NAME, load_planpers
from prefcraft.programs.lampqa import (
    ANSWER_RETRIES,
    PLANPERS_RETRIES,
    AspectJudge,
    BM25Retriever,
    DenseRetriever,
    NoPersonalization,
    PlanPers,
    RAGPersonalization,
    Retriever,
)
from prefcraft.settings import Role, Settings
from prefcraft.tracking.runs import StepTracker, data_digest, model_params

logger = logging.getLogger(__name__)

METHODS: tuple[str, ...] = get_args(Method)
RANDOM_PROFILE_METHOD = "rag_random"
COMPILED_METHOD = "planpers_compiled"
JUDGE_INPUTS = ("question", "details", "response", "aspects")


def load_evaluated(options: MethodOptions) -> LoadedQuestions:
    """The questions the evaluation answers, before any model starts; a retrieval that cannot be built or a compiled
    PlanPers that cannot be loaded stops it here too."""
    loaded = select_questions(options, options.questions_split)
    build_retriever(options)
    if options.compiled is not None:
        load_planpers(options.compiled)
    return loaded


def evaluation_params(options: MethodOptions, run: StepRun) -> dict[str, Any]:
    """The `lampqa-evaluate` run's params: the questions (`run.loaded`), the methods with the compiled PlanPers that
    the work compares (`compiled_planpers`, for the task model as given), the retrieval, the retries and the
    models."""
    loaded: LoadedQuestions = run.loaded
    compiled = compiled_planpers(options, run.settings.task.model, warn=False)
    return {"program": "lampqa", "data": str(options.source), "data_digest": data_digest(options.source),
            "split": options.questions_split, "questions": len(loaded.questions),
            "skipped_posts": loaded.skipped_posts, "empty_profiles": loaded.empty_profiles,
            "methods": method_names(options, compiled), "compiled": str(compiled or ""), **retrieval_params(options),
            **retry_params(options), **model_params(run.session)}


def evaluate(options: MethodOptions, run: StepRun) -> EvaluationOutcome:
    profile = run.settings.small_model_profile()
    programs, compiled = method_programs(options, run.settings.task.model, profile.post_chars if profile else None)
    return evaluate_methods(run.session, run.tracker, options, run.loaded, programs, compiled)


def select_questions(options: DataOptions, split: str) -> LoadedQuestions:
    """The questions of `split` in the options' categories, the first `max_questions` of each."""
    loaded = load_questions(options.source, split, tuple(options.categories or CONFIGS))
    if options.max_questions is not None:
        kept: dict[str, int] = {}
        questions = []
        for question in loaded.questions:
            kept[question.category] = kept.get(question.category, 0) + 1
            if kept[question.category] <= options.max_questions:
                questions.append(question)
        loaded.questions = questions
    if not loaded.questions:
        raise ConfigError(f"no {split} questions in {options.source}")
    return loaded


def build_retriever(options: DataOptions) -> Retriever:
    """Profile retrieval: BM25, or dense with an OpenAI-compatible embeddings endpoint; the top `k` posts. A dense
    request asks the server to cut each text to `embedding_max_tokens` tokens (vLLM's `truncate_prompt_tokens`): the
    reference's tokenizer cuts at Contriever's 512, and vLLM refuses a longer text instead of cutting it."""
    if options.retriever == "bm25":
        return BM25Retriever(options.k)
    if not options.embedding_model:
        raise ConfigError("dense retrieval needs an embedding model",
                          "pass --embedding-model (a litellm string, e.g. openai/<name>) and --embedding-api-base")
    extra: dict[str, Any] = {}
    if options.embedding_api_base:
        extra.update(api_base=options.embedding_api_base, api_key="EMPTY")
    if options.embedding_max_tokens:
        extra["extra_body"] = {"truncate_prompt_tokens": options.embedding_max_tokens}
    return DenseRetriever(dspy.Embedder(options.embedding_model, **extra), options.k, options.embedding_similarity)


def retrieval_params(options: DataOptions) -> dict[str, Any]:
    """The retrieval as a run's params."""
    return {"k": options.k, "kind": options.retriever, "embedding_model": options.embedding_model,
            "embedding_api_base": options.embedding_api_base, "embedding_similarity": options.embedding_similarity,
            "embedding_max_tokens": options.embedding_max_tokens}


def retry_params(options: DataOptions) -> dict[str, Any]:
    """The retries of replies that do not parse, as a run's params (None: each method's own)."""
    return {"answer_retries": options.answer_retries, "judge_retries": options.judge_retries}


def method_programs(
    options: MethodOptions, task_model: str, post_chars: int | None = None
) -> tuple[dict[str, dspy.Module], Path | None]:
    """A program per method asked for, plus the compiled PlanPers given or shipped for the task model; `post_chars`
    (the small-model profile's) cuts each retrieved post. Each retries a reply that does not parse as the reference's
    script for that method does, unless `answer_retries` says otherwise."""
    unknown = sorted(set(options.methods) - set(METHODS))
    if unknown:
        raise ConfigError(f"unknown method(s) {', '.join(unknown)}", f"use {', '.join(METHODS)}")
    answer_retries = options.retries_for(ANSWER_RETRIES)
    planpers_retries = options.retries_for(PLANPERS_RETRIES)

    def rag() -> RAGPersonalization:
        return RAGPersonalization(build_retriever(options), post_chars, answer_retries)

    builders = {BASELINE: lambda: NoPersonalization(answer_retries), "rag": rag, RANDOM_PROFILE_METHOD: rag,
                "planpers": lambda: PlanPers(build_retriever(options), post_chars, planpers_retries)}
    programs = {name: builders[name]() for name in options.methods}
    compiled = compiled_planpers(options, task_model)
    if compiled is not None:
        programs[COMPILED_METHOD] = load_planpers(compiled, build_retriever(options), post_chars, planpers_retries)[0]
    return programs, compiled


def compiled_planpers(options: MethodOptions, task_model: str, *, warn: bool = True) -> Path | None:
    """The compiled PlanPers to compare: `--compiled`, else the one compiled/index.json registers for `task_model`
    (unless `--no-shipped`). `warn=False` keeps quiet about a registered file that a losing compile has written over:
    the run's params look it up before the work, which says so."""
    if options.compiled or not options.use_shipped:
        return options.compiled
    return shipped_compiled(PROGRAM_NAME, task_model, warn=warn)


def method_names(options: MethodOptions, compiled: Path | None) -> list[str]:
    """The methods `method_programs` builds, in its order: those asked for, then the compiled PlanPers if any."""
    return [*dict.fromkeys(options.methods), *([COMPILED_METHOD] if compiled is not None else [])]


def evaluate_methods(
    session: Settings, tracker: StepTracker, options: MethodOptions, loaded: LoadedQuestions,
    programs: dict[str, dspy.Module], compiled: Path | None,
) -> EvaluationOutcome:
    """Each method on the questions, in a child run of the step's run (which the runner opened); the summary and the
    gains over the baseline go to the step's run."""
    examples = [question.example() for question in loaded.questions]
    inputs = {name: with_random_profiles(examples, session.seed) if name == RANDOM_PROFILE_METHOD else examples
              for name in programs}
    outcomes: dict[str, MethodOutcome] = {}
    for name, program in programs.items():
        with tracker.child(f"lampqa-{name}", {"method": name}):
            outcomes[name], predictions = evaluate_method(session, name, program, inputs[name],
                                                          options.judge_retries)
            _log_method(tracker, outcomes[name], predictions, loaded.questions, options.output_dir)
    if BASELINE in outcomes:
        for outcome in outcomes.values():
            outcome.gain = relative_gain(outcome.report.overall.mean, outcomes[BASELINE].report.overall.mean)
    result = EvaluationOutcome(options.questions_split, len(examples), loaded.skipped_posts, outcomes, compiled,
                               loaded.empty_profiles)
    tracker.write_json(options.output_dir / "lampqa-summary.json", _summary(result))
    tracker.log_metrics({f"{name}_gain": method.gain for name, method in outcomes.items()
                         if method.gain == method.gain})
    return result


def with_random_profiles(examples: Sequence[dspy.Example], seed: int) -> list[dspy.Example]:
    """Each question with another user's profile in place of its own, drawn at random (`seed`) from the distinct
    profiles of the other questions."""
    profiles = list(dict.fromkeys(example.profile for example in examples))
    if len(profiles) < 2:
        raise ConfigError(f"{RANDOM_PROFILE_METHOD} needs questions of at least two users, to answer each from "
                          "another user's profile", "evaluate more questions (--max-questions, --categories)")
    position = {profile: index for index, profile in enumerate(profiles)}
    rng = random.Random(seed)
    drawn = []
    for example in examples:
        other = rng.randrange(len(profiles) - 1)  # any profile but the question's own
        drawn.append(example.copy(profile=profiles[other + (other >= position[example.profile])]))
    return drawn


def evaluate_method(
    session: Settings, name: str, program: dspy.Module, examples: Sequence[dspy.Example], judge_retries: int
) -> tuple[MethodOutcome, list[dspy.Prediction | None]]:
    """The `answer` step on the task model, then the `judge` step (and, for PlanPers, `coverage`) on the judge, each
    judgment asked for again up to `judge_retries` times while its reply does not parse. The predictions (answers,
    plans, retrieved posts) come apart from the outcome: they go to the method's results file, and only the outcome
    is kept for the summary."""
    answered, answer_failures, answer_cost = run_recording_failures(session, program, examples, _answered, "task")
    predictions = [prediction for _, prediction, _ in answered]
    judge = AspectJudge(judge_retries)
    judged, judge_cost = _judge(session, judge, examples, [p.answer if p else None for p in predictions],
                                answer_failures)
    cost = {"answer": answer_cost, "judge": judge_cost}
    coverage = None
    if isinstance(program, PlanPers):
        plan_scores, cost["coverage"] = _judge(session, judge, examples,
                                               [p.plan if p else None for p in predictions], answer_failures)
        coverage = bootstrap_mean([result.score for result in plan_scores], seed=session.seed)
    return MethodOutcome(name, method_report(judged, seed=session.seed), judged, cost, coverage), predictions


class FailureRecorded(dspy.Module):
    """`program`, returning for a question it fails a prediction that holds only the reason (`failure`) instead of
    raising: dspy.Evaluate goes on past a raised error too, but keeps no reason."""

    def __init__(self, program: dspy.Module):
        super().__init__()
        self.program = program

    def forward(self, **inputs: Any) -> dspy.Prediction:
        try:
            return self.program(**inputs)
        except Exception as error:  # one question's failure, recorded; a stop (Ctrl-C) is no Exception
            if not is_item_failure(error):
                raise  # a timeout or a server gone: the command ends (evaluate_program)
            return dspy.Prediction(failure=failure_reason(error))


def run_recording_failures(
    session: Settings, program: dspy.Module, examples: Sequence[dspy.Example],
    metric: Callable[[dspy.Example, dspy.Prediction], float], role: Role,
) -> tuple[list[tuple[dspy.Example, dspy.Prediction | None, float]], dict[str, str], StepCost]:
    """`run_pipeline_step` of `program` with each failed question's reason kept: the results (a failed question's
    prediction None), the reasons by question id, and the cost with them counted as failures. Any failure is checked
    against the role's server, which names a server that died instead of counting its silence as failures."""
    results, cost = run_pipeline_step(session, FailureRecorded(program), examples, metric, role)
    failures = {example.id: prediction.failure for example, prediction, _ in results
                if prediction is not None and "failure" in prediction}
    cost.failures = len(failures)
    if failures:
        check_reachable(session.model_for(role), role)
    kept = [(example, None if example.id in failures else prediction, score) for example, prediction, score in results]
    return kept, failures, cost


def judge_example(example: dspy.Example, response: str) -> dspy.Example:
    """A question's judge input: its gold narrative (as the details) and aspects, and the response to score."""
    return dspy.Example(id=example.id, category=example.category, question=example.question,
                        details=example.narrative, response=response,
                        aspects=example.rubric_aspects).with_inputs(*JUDGE_INPUTS)


def _judge(
    session: Settings, judge: AspectJudge, examples: Sequence[dspy.Example], responses: Sequence[str | None],
    answer_failures: dict[str, str],
) -> tuple[list[QuestionResult], StepCost]:
    """Each response judged on every gold aspect; a missing response (its answer failed, for the reason in
    `answer_failures`) is not judged and scores 0.

    AspectJudge goes on past a failed aspect, so a question can be partly judged: any failed judgment is checked
    against the judge's server, which names a server that died instead of counting its silence as failed judgments.
    """
    to_judge = [judge_example(example, response) for example, response in zip(examples, responses, strict=True)
                if response is not None]
    judged, whole_failures, cost = run_recording_failures(session, judge, to_judge, _scored, "judge")
    judgments: dict[str, dict[str, tuple]] = {}
    for example, prediction, _ in judged:
        if prediction is None:  # every aspect's call failed, all for the one reason recorded
            aspects = len(example.aspects)
            judgments[example.id] = {"scores": (None,) * aspects,
                                     "judge_failures": (whole_failures[example.id],) * aspects}
        else:
            judgments[example.id] = {"scores": tuple(prediction.scores), "judge_failures": tuple(prediction.failures)}
    results = [QuestionResult(example.id, example.category, answer_failure=answer_failures.get(example.id),
                              **judgments.get(example.id, {"scores": ()})) for example in examples]
    cost.failures = sum(result.failed_judgments for result in results)
    if cost.failures and not whole_failures:
        check_reachable(session.model_for("judge"), "judge")
    return results, cost


def _answered(example: dspy.Example, prediction: dspy.Prediction) -> float:
    return float(bool(prediction.get("answer")))


def _scored(example: dspy.Example, prediction: dspy.Prediction) -> float:
    return 0.0 if "failure" in prediction else question_score(prediction.scores)


def _log_method(
    tracker: StepTracker, outcome: MethodOutcome, predictions: Sequence[dspy.Prediction | None],
    questions: Sequence[LampQAQuestion], output_dir: Path,
) -> None:
    metrics = outcome.report.as_metrics()
    for step, cost in outcome.cost.items():
        metrics.update(cost.usage.as_metrics(f"{step}_"))
        metrics[f"{step}_seconds"] = cost.seconds
        metrics[f"{step}_failures"] = float(cost.failures)
    if outcome.coverage is not None:
        metrics["plan_coverage"] = outcome.coverage.mean
    tracker.log_metrics(metrics)
    rows = []
    for question, result, prediction in zip(questions, outcome.results, predictions, strict=True):
        rows.append({"id": question.id, "category": question.category, "method": outcome.name,
                     "answer": getattr(prediction, "answer", None), "plan": getattr(prediction, "plan", None),
                     "retrieved": getattr(prediction, "retrieved", None), "scores": list(result.scores),
                     "score": result.score, "answer_failure": result.answer_failure,
                     "judge_failures": list(result.judge_failures)})
    path = tracker.write_results(output_dir / f"lampqa-{outcome.name}.jsonl", rows)
    logger.info("wrote %d results of %s to %s", len(rows), outcome.name, path)


def _summary(outcome: EvaluationOutcome) -> dict[str, object]:
    return {
        "split": outcome.split, "questions": outcome.questions, "skipped_posts": outcome.skipped_posts,
        "empty_profiles": outcome.empty_profiles,
        "compiled": str(outcome.compiled or ""),
        "methods": {
            name: {"score": asdict(method.report.overall), "score_pooled": asdict(method.report.pooled),
                   "by_category": {category: asdict(e) for category, e in method.report.by_category.items()},
                   "relative_gain": method.gain, "failed_answers": method.report.failed_answers,
                   "failed_judgments": method.report.failed_judgments,
                   "failure_kinds": method.report.failure_kinds,
                   "plan_coverage": asdict(method.coverage) if method.coverage else None,
                   "cost": {step: asdict(cost) for step, cost in method.cost.items()}}
            for name, method in outcome.methods.items()
        },
    }
