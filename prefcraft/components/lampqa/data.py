"""LaMP-QA questions (seeds/003): Hugging Face `alireza7/LaMP-QA` by name, or local files of the same schema.

A row is one question of one user: `id`, `question`, `narrative` (the user's detailed need; gold), `rubric_aspects`
(list of `{aspect, reason, evidence}`; gold) and `profile` (the user's past posts, `{id, text, category}`). Other
columns are ignored. The hub dataset has three configs (the categories, `CONFIGS`), each with train / validation /
test splits; a local folder mirrors it as `<folder>/<config>/<split>.jsonl` (or .json / .parquet). A single local file
is one split of one category: its parent folder's name when that is a config, else the file's stem.

Bad input, as the reference code takes it: a row whose profile is empty (or holds only posts with no text) loads, with
one warning per file naming its rows and the field, and is answered without past posts (the reference's retrieval
ranks an empty profile into an empty context, LaMP-Benchmark/LaMP-QA retrieval/rank_dataset.py:53 and
data/formetters.py:94); such rows are counted in `LoadedQuestions.empty_profiles`. A row without a profile list, or
whose rubric has no aspects (the reference's score divides by the number of aspects, evaluation/evaluator.py:114),
raises DataError naming the file, row and field. A post with no text is skipped and counted in
`LoadedQuestions.skipped_posts`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import read_rows
from prefcraft.programs.lampqa import ProfilePost, RubricAspect

logger = logging.getLogger(__name__)

HUB_DATASET = "alireza7/LaMP-QA"
CONFIGS = ("Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture")
SPLITS = ("train", "validation", "test")
DATA_SPLITS = {"train": "train", "val": "validation", "test": "test"}
"""The dataset's split for each `--split` (prefcraft's one name for every component's validation split: val)."""
SUFFIXES = (".jsonl", ".json", ".parquet")
SAMPLE_QUESTIONS = Path(__file__).resolve().parent / "sample"
PROGRAM_INPUTS = ("question", "profile")


class LampQAQuestion(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    category: str
    question: str = Field(min_length=1)
    narrative: str
    rubric_aspects: tuple[RubricAspect, ...] = Field(min_length=1)
    profile: tuple[ProfilePost, ...]

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value

    def example(self) -> dspy.Example:
        """The question as a program example: only the question and the profile are inputs; the narrative and the
        rubric aspects ride along for the judge."""
        return dspy.Example(
            id=self.id, category=self.category, question=self.question, profile=self.profile,
            narrative=self.narrative, rubric_aspects=self.rubric_aspects,
        ).with_inputs(*PROGRAM_INPUTS)


@dataclass
class LoadedQuestions:
    questions: list[LampQAQuestion] = field(default_factory=list)
    skipped_posts: int = 0
    """Profile posts with no text, left out of their profile."""
    empty_profiles: int = 0
    """Questions whose profile has no post with text: answered without past posts, as the reference does."""

    def extend(self, other: LoadedQuestions) -> None:
        self.questions.extend(other.questions)
        self.skipped_posts += other.skipped_posts
        self.empty_profiles += other.empty_profiles


def load_questions(
    source: str | Path = SAMPLE_QUESTIONS, split: str = "test", configs: tuple[str, ...] = CONFIGS
) -> LoadedQuestions:
    """The questions of `split` in each of `configs`: from a folder laid out like the hub dataset, a single local file
    (which is that one split), or the hub dataset's name."""
    if split not in SPLITS:
        raise DataError(source, None, None, f"unknown split {split!r}", f"use one of {', '.join(SPLITS)}")
    path = Path(source)
    if path.suffix in SUFFIXES:
        category = path.parent.name if path.parent.name in CONFIGS else path.stem
        return load_file(path, category)
    loaded = LoadedQuestions()
    if path.is_dir():
        files = [_split_file(path / config, split) for config in configs]
        if not any(files):
            raise DataError(path, None, None, f"no {split} file for {', '.join(configs)}",
                            f"expected {path}/<config>/{split}.jsonl (or .json / .parquet)")
        for config, file in zip(configs, files, strict=True):
            if file is not None:
                loaded.extend(load_file(file, config))
        return loaded
    for config in configs:
        rows = read_rows(str(source), hub_config=config, hub_split=split)
        loaded.extend(_parse_rows(rows, f"{source}[{config}/{split}]", config))
    return loaded


def load_file(path: Path, category: str) -> LoadedQuestions:
    """Every question of one local .jsonl / .json / .parquet file, all of `category`."""
    return _parse_rows(read_rows(path), str(path), category)


def _split_file(folder: Path, split: str) -> Path | None:
    return next((folder / f"{split}{suffix}" for suffix in SUFFIXES if (folder / f"{split}{suffix}").is_file()), None)


def _parse_rows(rows: Any, source: str, category: str) -> LoadedQuestions:
    loaded = LoadedQuestions()
    seen: dict[str, int] = {}
    empty: list[int] = []
    for index, row in enumerate(rows):
        question, skipped = _parse_row(row, source, index, category)
        if question.id in seen:
            raise DataError(source, index, "id", f"the same id as row {seen[question.id]}", "ids must be unique")
        seen[question.id] = index
        loaded.questions.append(question)
        loaded.skipped_posts += skipped
        if not question.profile:
            empty.append(index)
    if empty:
        logger.warning("%s, rows %s, field 'profile': no past post with text; answered without past posts, as the "
                       "reference answers an empty profile", source, ", ".join(map(str, empty)))
    loaded.empty_profiles = len(empty)
    return loaded


def _parse_row(row: Any, source: str, index: int, category: str) -> tuple[LampQAQuestion, int]:
    if not isinstance(row, dict):
        raise DataError(source, index, None, f"expected an object, got {type(row).__name__}")
    profile = row.get("profile")
    posts = [post for post in profile if not _empty_post(post)] if isinstance(profile, list) else profile
    try:
        question = LampQAQuestion.model_validate({**row, "category": category, "profile": posts})
    except ValidationError as error:
        issue = error.errors()[0]
        location = ".".join(str(part) for part in issue["loc"]) or None
        raise DataError(source, index, location, issue["msg"]) from None
    return question, len(profile) - len(posts)


def _empty_post(post: Any) -> bool:
    return isinstance(post, dict) and isinstance(post.get("text"), str) and not post["text"].strip()
