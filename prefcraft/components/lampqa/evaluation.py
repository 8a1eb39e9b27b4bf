"""`prefcraft lampqa evaluate` (and the demo): LaMP-QA's methods answer held-out questions, the aspect judge scores.

Per method, two steps, each a `dspy.Evaluate` pass with questions in parallel: `answer` (the method's program on the
task model: retrieval, the planner for PlanPers, the answerer) and `judge` (one judge call per gold aspect of each
question, on the judge model). PlanPers' plan is judged on its own too (`coverage`: the share of the gold aspects its
plan covers, scored like an answer). `rag_random` is the paper's control (Table 2): RAG over another user's profile,
drawn at random (seeded) for each question from the profiles of the other questions evaluated. One MLflow parent run,
one child run per method; per-question results go to `<output-dir>/lampqa-<method>.jsonl` and the summary to
`<output-dir>/lampqa-summary.json`, both written atomically.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import dspy

from prefcraft.components.lampqa.data import CONFIGS, SAMPLE_QUESTIONS, LampQAQuestion, LoadedQuestions, load_questions
from prefcraft.components.lampqa.metrics import (
    QuestionResult,
    method_report,
    question_score,
    relative_gain,
)
from prefcraft.components.lampqa.report import format_evaluation
from prefcraft.components.lampqa.results import BASELINE, EvaluationOutcome, MethodOutcome
from prefcraft.errors import ConfigError
from prefcraft.evaluation import StepCost, run_step
from prefcraft.files import write_jsonl_atomic, write_text_atomic
from prefcraft.lm import check_reachable
from prefcraft.metrics.stats import bootstrap_mean
from prefcraft.optimizers.artifacts import shipped_compiled
from prefcraft.optimizers.lampqa import PROGRAM_NAME, load_planpers
from prefcraft.programs.lampqa import (
    DEFAULT_K,
    AspectJudge,
    BM25Retriever,
    DenseRetriever,
    NoPersonalization,
    PlanPers,
    RAGPersonalization,
    Retriever,
)
from prefcraft.runtime import model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, log_json, log_metrics, model_params, start_tracking, tracked_run

logger = logging.getLogger(__name__)

RUNS = Path("runs/lampqa")
METHODS = ("none", "rag", "rag_random", "planpers")
DEFAULT_METHODS = ("none", "rag", "planpers")
RANDOM_PROFILE_METHOD = "rag_random"
COMPILED_METHOD = "planpers_compiled"
JUDGE_INPUTS = ("question", "details", "response", "aspects")


@dataclass
class LampQAData:
    """Which questions: a folder laid out like the hub dataset, one local file, or the hub name; `max_questions`
    keeps the first N of each category."""

    source: str | Path = SAMPLE_QUESTIONS
    configs: tuple[str, ...] = CONFIGS
    max_questions: int | None = None

    def load(self, split: str) -> LoadedQuestions:
        loaded = load_questions(self.source, split, self.configs)
        if self.max_questions is not None:
            kept: dict[str, int] = {}
            questions = []
            for question in loaded.questions:
                kept[question.category] = kept.get(question.category, 0) + 1
                if kept[question.category] <= self.max_questions:
                    questions.append(question)
            loaded.questions = questions
        if not loaded.questions:
            raise ConfigError(f"no {split} questions in {self.source}")
        return loaded


@dataclass
class RetrievalConfig:
    """Profile retrieval: BM25 (default), or dense with an OpenAI-compatible embeddings endpoint; top `k` posts."""

    k: int = DEFAULT_K
    kind: Literal["bm25", "dense"] = "bm25"
    embedding_model: str | None = None
    embedding_api_base: str | None = None

    def build(self) -> Retriever:
        if self.kind == "bm25":
            return BM25Retriever(self.k)
        if not self.embedding_model:
            raise ConfigError("dense retrieval needs an embedding model",
                              "pass --embedding-model (a litellm string, e.g. openai/<name>) and --embedding-api-base")
        extra = {"api_base": self.embedding_api_base, "api_key": "EMPTY"} if self.embedding_api_base else {}
        return DenseRetriever(dspy.Embedder(self.embedding_model, **extra), self.k)


@dataclass
class EvaluationJob:
    data: LampQAData = field(default_factory=LampQAData)
    split: str = "test"
    methods: Sequence[str] = DEFAULT_METHODS
    compiled: Path | None = None
    use_shipped: bool = True
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    output_dir: Path = RUNS


def run_lampqa_evaluation(settings: Settings, job: EvaluationJob, emit: Callable[[str], None]) -> EvaluationOutcome:
    loaded = job.data.load(job.split)
    profile = settings.small_model_profile()
    programs, compiled = method_programs(job, settings.task.model, profile.post_chars if profile else None)
    with model_session(settings) as session:
        start_tracking(session)
        outcome = evaluate_methods(session, job, loaded, programs, compiled)
    emit(format_evaluation(outcome))
    return outcome


def method_programs(
    job: EvaluationJob, task_model: str, post_chars: int | None = None
) -> tuple[dict[str, dspy.Module], Path | None]:
    """A program per method asked for, plus the compiled PlanPers given or shipped for the task model; `post_chars`
    (the small-model profile's) cuts each retrieved post."""
    unknown = sorted(set(job.methods) - set(METHODS))
    if unknown:
        raise ConfigError(f"unknown method(s) {', '.join(unknown)}", f"use {', '.join(METHODS)}")

    def rag() -> RAGPersonalization:
        return RAGPersonalization(job.retrieval.build(), post_chars)

    builders = {"none": NoPersonalization, "rag": rag, RANDOM_PROFILE_METHOD: rag,
                "planpers": lambda: PlanPers(job.retrieval.build(), post_chars)}
    programs = {name: builders[name]() for name in job.methods}
    compiled = job.compiled or (shipped_compiled(PROGRAM_NAME, task_model) if job.use_shipped else None)
    if compiled is not None:
        programs[COMPILED_METHOD] = load_planpers(compiled, job.retrieval.build(), post_chars)[0]
    return programs, compiled


def evaluate_methods(
    session: Settings, job: EvaluationJob, loaded: LoadedQuestions, programs: dict[str, dspy.Module],
    compiled: Path | None,
) -> EvaluationOutcome:
    examples = [question.example() for question in loaded.questions]
    params = {"program": "lampqa", "data": str(job.data.source), "data_digest": data_digest(job.data.source),
              "split": job.split, "questions": len(examples), "skipped_posts": loaded.skipped_posts,
              "methods": list(programs), "compiled": str(compiled or ""), **asdict(job.retrieval),
              **model_params(session)}
    inputs = {name: with_random_profiles(examples, session.seed) if name == RANDOM_PROFILE_METHOD else examples
              for name in programs}
    outcomes: dict[str, MethodOutcome] = {}
    with tracked_run("lampqa-evaluate", params):
        for name, program in programs.items():
            with tracked_run(f"lampqa-{name}", {"method": name}, nested=True):
                outcomes[name] = evaluate_method(session, name, program, inputs[name])
                _log_method(outcomes[name], loaded.questions, job.output_dir)
        if BASELINE in outcomes:
            for outcome in outcomes.values():
                outcome.gain = relative_gain(outcome.report.overall.mean, outcomes[BASELINE].report.overall.mean)
        result = EvaluationOutcome(job.split, len(examples), loaded.skipped_posts, outcomes, compiled)
        summary = _summary(result)
        write_text_atomic(job.output_dir / "lampqa-summary.json", _json(summary))
        log_json(summary, "lampqa-summary.json")
        log_metrics({f"{name}_gain": method.gain for name, method in outcomes.items() if method.gain == method.gain})
    return result


def with_random_profiles(examples: Sequence[dspy.Example], seed: int) -> list[dspy.Example]:
    """Each question with another user's profile in place of its own, drawn at random (`seed`) from the distinct
    profiles of the other questions."""
    profiles = list(dict.fromkeys(example.profile for example in examples))
    if len(profiles) < 2:
        raise ConfigError(f"{RANDOM_PROFILE_METHOD} needs questions of at least two users, to answer each from "
                          "another user's profile", "evaluate more questions (--max-questions, --configs)")
    position = {profile: index for index, profile in enumerate(profiles)}
    rng = random.Random(seed)
    drawn = []
    for example in examples:
        other = rng.randrange(len(profiles) - 1)  # any profile but the question's own
        drawn.append(example.copy(profile=profiles[other + (other >= position[example.profile])]))
    return drawn


def evaluate_method(
    session: Settings, name: str, program: dspy.Module, examples: Sequence[dspy.Example]
) -> MethodOutcome:
    """The `answer` step on the task model, then the `judge` step (and, for PlanPers, `coverage`) on the judge."""
    answered, answer_cost = run_step(session, program, examples, _answered, "task")
    predictions = [prediction for _, prediction, _ in answered]
    judged, judge_cost = _judge(session, examples, [p.answer if p else None for p in predictions])
    cost = {"answer": answer_cost, "judge": judge_cost}
    coverage = None
    if isinstance(program, PlanPers):
        plan_scores, cost["coverage"] = _judge(session, examples, [p.plan if p else None for p in predictions])
        coverage = bootstrap_mean([result.score for result in plan_scores], seed=session.seed)
    return MethodOutcome(name, method_report(judged, seed=session.seed), judged, predictions, cost, coverage)


def judge_example(example: dspy.Example, response: str) -> dspy.Example:
    """A question's judge input: its gold narrative (as the details) and aspects, and the response to score."""
    return dspy.Example(id=example.id, category=example.category, question=example.question,
                        details=example.narrative, response=response,
                        aspects=example.rubric_aspects).with_inputs(*JUDGE_INPUTS)


def _judge(
    session: Settings, examples: Sequence[dspy.Example], responses: Sequence[str | None]
) -> tuple[list[QuestionResult], StepCost]:
    """Each response judged on every gold aspect; a missing response (its answer failed) is not judged.

    AspectJudge goes on past a failed aspect, so a question can be partly judged: any failed judgment is checked
    against the judge's server, which names a server that died instead of counting its silence as failed judgments.
    """
    to_judge = [judge_example(example, response) for example, response in zip(examples, responses, strict=True)
                if response is not None]
    judged, cost = run_step(session, AspectJudge(), to_judge, _scored, "judge")
    scores = {example.id: tuple(prediction.scores) if prediction else (None,) * len(example.aspects)
              for example, prediction, _ in judged}
    results = [QuestionResult(example.id, example.category, scores.get(example.id, ()),
                              answer_failed=example.id not in scores) for example in examples]
    cost.failures = sum(result.failed_judgments for result in results)
    if cost.failures:
        check_reachable(session.model_for("judge"), "judge")
    return results, cost



def _answered(example: dspy.Example, prediction: dspy.Prediction) -> float:
    return float(bool(prediction.answer))


def _scored(example: dspy.Example, prediction: dspy.Prediction) -> float:
    return question_score(prediction.scores)


def _log_method(outcome: MethodOutcome, questions: Sequence[LampQAQuestion], output_dir: Path) -> None:
    metrics = outcome.report.as_metrics()
    for step, cost in outcome.cost.items():
        metrics.update(cost.usage.as_metrics(f"{step}_"))
        metrics[f"{step}_seconds"] = cost.seconds
        metrics[f"{step}_failures"] = float(cost.failures)
    if outcome.coverage is not None:
        metrics["plan_coverage"] = outcome.coverage.mean
    log_metrics(metrics)
    rows = []
    for question, result, prediction in zip(questions, outcome.results, outcome.predictions, strict=True):
        rows.append({"id": question.id, "category": question.category, "method": outcome.name,
                     "answer": getattr(prediction, "answer", None), "plan": getattr(prediction, "plan", None),
                     "retrieved": getattr(prediction, "retrieved", None), "scores": list(result.scores),
                     "score": result.score, "answer_failed": result.answer_failed})
    path = write_jsonl_atomic(output_dir / f"lampqa-{outcome.name}.jsonl", rows)
    logger.info("wrote %d results of %s to %s", len(rows), outcome.name, path)


def _summary(outcome: EvaluationOutcome) -> dict[str, object]:
    return {
        "split": outcome.split, "questions": outcome.questions, "skipped_posts": outcome.skipped_posts,
        "compiled": str(outcome.compiled or ""),
        "methods": {
            name: {"score": asdict(method.report.overall), "score_pooled": asdict(method.report.pooled),
                   "by_category": {category: asdict(e) for category, e in method.report.by_category.items()},
                   "relative_gain": method.gain, "failed_answers": method.report.failed_answers,
                   "failed_judgments": method.report.failed_judgments,
                   "plan_coverage": asdict(method.coverage) if method.coverage else None,
                   "cost": {step: asdict(cost) for step, cost in method.cost.items()}}
            for name, method in outcome.methods.items()
        },
    }


def _json(value: object) -> str:
    return json.dumps(value, indent=2, default=str) + "\n"
