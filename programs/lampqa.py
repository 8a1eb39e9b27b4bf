"""LaMP-QA (seeds/003): the paper's three methods as programs, the profile retrievers they share, and the aspect judge.

Every answerer takes `question` and `profile` (the user's past posts) and returns a `dspy.Prediction` with `answer`:
- `NoPersonalization` answers the question alone;
- `RAGPersonalization` retrieves the top-k posts for the question and answers with them;
- `PlanPers` retrieves, plans the aspects the user expects (`aspects`, `plan`), then answers with the plan.
Retrieval is BM25 (bm25s) by default, or dense with any embedding function (`dspy.Embedder` over an OpenAI-compatible
embeddings endpoint), ranked by the raw dot product as the reference ranks Contriever's vectors, or by cosine.
`post_chars` cuts each retrieved post for a small model's context (the small-model profile's `post_chars`); by default
the posts are shown whole, as in the paper. The question's narrative and rubric aspects never enter these programs;
`AspectJudge` reads them. `ProfilePost` and `RubricAspect` are the types they read (the loader makes them).

`retries`: how many times each program asks again for a reply that does not parse (`predict_with_retries`), 0.1 warmer
each time, as the reference does; none by default, the step's options give the reference's counts (`ANSWER_RETRIES`,
`PLANPERS_RETRIES`, `JUDGE_RETRIES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import dspy
import numpy as np
from dspy.utils.exceptions import AdapterParseError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from prefcraft.engine.item_failures import failure_reason, is_item_failure
from prefcraft.signatures.lampqa import (
    AnswerQuestion,
    AnswerWithPlan,
    AnswerWithProfile,
    JudgeAspect,
    PlanAspects,
    PlannedAspect,
)

DEFAULT_K = 10  # the paper's k
Embed = Callable[[list[str]], Sequence[Sequence[float]]]
Similarity = Literal["dot", "cosine"]
# The reference's retries of a reply that does not parse (LaMP-Benchmark/LaMP-QA baselines.py:79, planpers.py:90,
# evaluation/evaluator.py:74): each retry adds 0.1 to the temperature while it is below 1.0 (baselines.py:139,
# evaluator.py:100).
ANSWER_RETRIES = 20
PLANPERS_RETRIES = 100
JUDGE_RETRIES = 100
RETRY_WARMING = 0.1
RETRY_WARMING_BELOW = 1.0


class ProfilePost(BaseModel):
    """One past post of the user: in LaMP-QA, a question they asked with its description."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    text: str
    category: str | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value


class RubricAspect(BaseModel):
    """One aspect the user expects in the answer (gold: only the judge reads it)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    aspect: str = Field(min_length=1)
    reason: str
    evidence: str


Retriever = Callable[[str, Sequence[ProfilePost]], list[ProfilePost]]


class BM25Retriever:
    """The k posts of the profile that BM25 ranks highest for the question; ties keep profile order."""

    def __init__(self, k: int = DEFAULT_K):
        self.k = k

    def __call__(self, question: str, posts: Sequence[ProfilePost]) -> list[ProfilePost]:
        if not posts:
            return []  # an empty profile: the answer is written without past posts, as the reference's is
        import bm25s  # imported here: it loads scipy and its tokenizer tables

        options = {"stopwords": "en", "return_ids": False, "show_progress": False}
        index = bm25s.BM25()
        index.index(bm25s.tokenize([post.text for post in posts], **options), show_progress=False)
        query = bm25s.tokenize([question], **options)[0]
        scores = index.get_scores(query) if query else np.zeros(len(posts))
        return _top_k(posts, scores, self.k)


class DenseRetriever:
    """The k posts whose embeddings score highest against the question's: by raw dot product (the reference's, over
    Contriever's mean-pooled, unnormalized vectors) or by cosine; `embed` maps texts to vectors."""

    def __init__(self, embed: Embed, k: int = DEFAULT_K, similarity: Similarity = "dot"):
        self.embed = embed
        self.k = k
        self.similarity = similarity

    def __call__(self, question: str, posts: Sequence[ProfilePost]) -> list[ProfilePost]:
        if not posts:
            return []
        vectors = np.asarray(self.embed([question, *(post.text for post in posts)]), dtype=float)
        if self.similarity == "cosine":
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return _top_k(posts, vectors[1:] @ vectors[0], self.k)


def _top_k(posts: Sequence[ProfilePost], scores: np.ndarray, k: int) -> list[ProfilePost]:
    order = sorted(range(len(posts)), key=lambda index: (-float(scores[index]), index))
    return [posts[index] for index in order[:k]]


def format_profile(posts: Sequence[ProfilePost], post_chars: int | None = None) -> str:
    """Retrieved posts as the planner and answerers read them, one a line, each cut to `post_chars` when given."""
    return "\n".join(f"- {_cut(post.text, post_chars)}" for post in posts)


def format_plan(aspects: Sequence[PlannedAspect]) -> str:
    return "\n".join(f"- {aspect.title}: {aspect.reason}" for aspect in aspects)


def format_rubric_aspect(aspect: RubricAspect) -> str:
    return f"{aspect.aspect}\nWhy it matters: {aspect.reason}\nEvidence: {aspect.evidence}"


def _cut(text: str, limit: int | None) -> str:
    text = " ".join(text.split())
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


def predict_with_retries(predict: dspy.Predict, retries: int, **inputs: Any) -> dspy.Prediction:
    """`predict(**inputs)`, asked again up to `retries` times while its reply does not parse, each time 0.1 warmer while
    below 1.0 (the same request again would get the same reply); the last failure is raised.
    Any other error (a server down, a timeout) is raised at once."""
    for attempt in range(retries):
        try:
            return _attempt(predict, attempt, inputs)
        except AdapterParseError:
            continue
    return _attempt(predict, retries, inputs)


def _attempt(predict: dspy.Predict, attempt: int, inputs: dict[str, Any]) -> dspy.Prediction:
    warmer = {"config": {"temperature": _retry_temperature(predict, attempt)}} if attempt else {}
    return predict(**inputs, **warmer)


def _retry_temperature(predict: dspy.Predict, attempt: int) -> float:
    """The temperature of retry number `attempt` (1, 2, ...): from the model's own, 0.1 added per retry while below
    1.0, in floating point as the reference adds it, so the last step lands on 1.0999999999999999 from 0.0 or 0.1."""
    lm = predict.lm or dspy.settings.lm
    temperature = float((lm.kwargs.get("temperature") if lm is not None else None) or 0.0)
    for _ in range(attempt):
        if temperature < RETRY_WARMING_BELOW:
            temperature += RETRY_WARMING
    return temperature


class NoPersonalization(dspy.Module):
    """The question alone; the profile is accepted and ignored, so every method takes the same inputs."""

    def __init__(self, retries: int = 0):
        super().__init__()
        self.retries = retries
        self.answer = dspy.Predict(AnswerQuestion)

    def forward(self, question: str, profile: Sequence[ProfilePost] = ()) -> dspy.Prediction:
        answer = predict_with_retries(self.answer, self.retries, question=question).answer
        return dspy.Prediction(answer=answer, retrieved=[])


class RAGPersonalization(dspy.Module):
    """Retrieval over the user's profile, then an answer conditioned on the retrieved posts."""

    def __init__(self, retriever: Retriever | None = None, post_chars: int | None = None, retries: int = 0):
        super().__init__()
        self.retrieve = retriever or BM25Retriever()
        self.post_chars = post_chars
        self.retries = retries
        self.answer = dspy.Predict(AnswerWithProfile)

    def forward(self, question: str, profile: Sequence[ProfilePost]) -> dspy.Prediction:
        posts = self.retrieve(question, profile)
        answer = predict_with_retries(self.answer, self.retries, profile=format_profile(posts, self.post_chars),
                                      question=question).answer
        return dspy.Prediction(answer=answer, retrieved=[post.id for post in posts])


class PlanPers(dspy.Module):
    """Retrieval, the aspect planner, then an answer conditioned on the retrieved posts and the plan. The plan gets the
    answer's retries: the reference's planner writes free text, which cannot fail to parse."""

    def __init__(self, retriever: Retriever | None = None, post_chars: int | None = None, retries: int = 0):
        super().__init__()
        self.retrieve = retriever or BM25Retriever()
        self.post_chars = post_chars
        self.retries = retries
        self.plan = dspy.Predict(PlanAspects)
        self.answer = dspy.Predict(AnswerWithPlan)

    def forward(self, question: str, profile: Sequence[ProfilePost]) -> dspy.Prediction:
        posts = self.retrieve(question, profile)
        context = format_profile(posts, self.post_chars)
        aspects = predict_with_retries(self.plan, self.retries, profile=context, question=question).aspects
        plan = format_plan(aspects)
        answer = predict_with_retries(self.answer, self.retries, profile=context, question=question, plan=plan).answer
        return dspy.Prediction(answer=answer, aspects=aspects, plan=plan, retrieved=[post.id for post in posts])


class AspectJudge(dspy.Module):
    """One judge call per gold aspect: 0 (not covered), 1 (somewhat) or 2 (well), each asked again up to `retries`
    times while its reply does not parse. A call that fails scores None and its reason is in `failures` (None where
    the call succeeded), so that the caller can count it; when every call fails, the last error is raised."""

    def __init__(self, retries: int = 0):
        super().__init__()
        self.retries = retries
        self.judge = dspy.Predict(JudgeAspect)

    def forward(self, question: str, details: str, response: str, aspects: Sequence[RubricAspect]) -> dspy.Prediction:
        scores: list[int | None] = []
        failures: list[str | None] = []
        error: Exception | None = None
        for aspect in aspects:
            try:
                scores.append(int(predict_with_retries(
                    self.judge, self.retries, question=question, details=details, response=response,
                    aspect=format_rubric_aspect(aspect)).match_score))
                failures.append(None)
            except Exception as failure:  # a failed judgment is counted by the caller, not guessed
                if not is_item_failure(failure):
                    raise
                scores.append(None)
                failures.append(failure_reason(failure))
                error = failure
        if error is not None and all(score is None for score in scores):
            raise error
        return dspy.Prediction(scores=scores, failures=failures)
