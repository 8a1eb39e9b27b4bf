"""PrefDisco scenarios in the reference's JSONL format (stellalisy/PrefDisco), from a local file or the hub by name.

A file's first line is `{"type": "metadata", ...}`; each further line is `{"type": "personalized_problem",
"problem_id", "original_problem", "persona", "persona_preferences", "evaluation_rubric"}`. `original_problem` is the
source row of the task's dataset, so its keys vary; it is normalized here to a question (with lettered options when
there are any) and a gold answer. The criteria's weights must sum to 1 (± 0.05), as the reference writes them; extra
keys are ignored. Errors name the file, the line (0-based, the metadata line included) and the field.

A scenario's task is its row's `task`, else the `task` of the metadata line above it (the reference keeps one task per
file). Without either, a warning says what was assumed: the problem ids' prefixes up to '-' when every id has one,
else one task for the whole file.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import read_rows

logger = logging.getLogger(__name__)

HUB_DATASET = "stellalisy/prefq-bench"
SAMPLE_SCENARIOS = Path(__file__).resolve().parent / "sample" / "scenarios.jsonl"
WEIGHT_TOLERANCE = 0.05
LETTERS = "ABCDEFGHIJ"


class _Level(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: int = Field(ge=1, le=5)
    description: str


class _Criterion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    preference: str
    description: str = ""
    weight: float = Field(ge=0)
    levels: list[_Level] = Field(min_length=1)


class _Rubric(BaseModel):
    model_config = ConfigDict(extra="ignore")

    evaluation_criteria: list[_Criterion] = Field(min_length=1)


class _Preference(BaseModel):
    model_config = ConfigDict(extra="ignore")

    description: str = ""
    value_range: list[str] | str = ""
    value: str
    local_importance: int = Field(ge=1, le=5)
    justification: str = ""
    type: str = "personal"


class _ScenarioRow(BaseModel):
    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    type: Literal["personalized_problem"]
    task: str | None = None
    problem_id: str
    original_problem: dict[str, Any]
    persona: dict[str, Any]
    persona_preferences: dict[str, _Preference] = Field(min_length=1)
    evaluation_rubric: _Rubric


@dataclass(frozen=True)
class Criterion:
    """One attribute of the hidden profile with its rubric: the user's value and the weight in PrefAlign."""

    preference: str
    description: str
    value: str
    weight: float
    levels: tuple[tuple[int, str], ...]
    value_range: tuple[str, ...] = ()
    importance: int = 3
    justification: str = ""

    def grading_text(self) -> str:
        """What the grader reads for this criterion (never shown to the asker), in the order of the paper's grader
        prompt: the criterion, its description, its levels, then the user's value and why they hold it."""
        levels = "; ".join(f"{score} = {text}" for score, text in self.levels)
        text = f"{self.preference}. Description: {self.description}. Levels: {levels}. Preference value: {self.value}"
        return text + (f". Context: {self.justification}" if self.justification else "")

    def profile_text(self) -> str:
        """The preference as the simulated user and the oracle read it: what it is about, its possible values, the
        user's value, how much it matters and why."""
        lines = [f"- {self.preference}: {self.description}" if self.description else f"- {self.preference}"]
        if self.value_range:
            lines.append(f"  possible values: {'; '.join(self.value_range)}")
        lines += [f"  this user's value: {self.value}", f"  importance: {self.importance} of 5"]
        if self.justification:
            lines.append(f"  why: {self.justification}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Scenario:
    scenario_id: str
    task: str
    """The row's `task`, else its file's (module docstring)."""
    problem_id: str
    question: str
    answer: str
    persona: dict[str, Any]
    criteria: tuple[Criterion, ...]

    @property
    def weights(self) -> list[float]:
        return [criterion.weight for criterion in self.criteria]

    def hidden_profile(self) -> str:
        """The persona and its preferences as the simulator and the oracle read them: the reference code's persona
        profile (name, summary, demographics, domain expertise, learning profile, personality, backstory), then each
        preference in full. A field the persona lacks is left out."""
        return "\n".join([*persona_profile(self.persona), "", "Preferences:",
                          *(criterion.profile_text() for criterion in self.criteria)])


# The sections of the reference's persona profile: its title (None: none), whether its lines are bullets, and each
# line's label and its field's path in a `stellalisy/prefq-bench` persona.
PERSONA_PROFILE = (
    ("Persona profile", False, (
        ("Name", ("name",)), ("Summary", ("minimal_necessary_description",)), ("Age", ("demographics", "age")),
        ("Occupation", ("demographics", "occupation")), ("Location", ("demographics", "location")),
        ("Hobbies", ("demographics", "hobbies")), ("Domain expertise", ("domain_expertise",)))),
    ("Learning profile", True, (
        ("Knowledge level", ("educational_profile", "knowledge_level")),
        ("Learning style", ("educational_profile", "cognitive_features", "learning_style")),
        ("Problem solving", ("educational_profile", "cognitive_features", "problem_solving")),
        ("Confidence", ("educational_profile", "affective_features", "confidence")),
        ("Anxiety triggers", ("educational_profile", "affective_features", "anxiety_triggers")),
        ("Motivation", ("educational_profile", "affective_features", "motivation")))),
    ("Personality", True, (
        ("Openness", ("personality_big5", "openness")),
        ("Conscientiousness", ("personality_big5", "conscientiousness")),
        ("Social style", ("personality_big5", "extraversion")))),
    (None, False, (("Backstory", ("backstory",)),)),
)


def persona_profile(persona: dict[str, Any]) -> list[str]:
    """The lines of the reference's persona profile, in its order and with its labels; a section the persona has no
    field of is left out."""
    lines: list[str] = []
    for title, bullets, fields in PERSONA_PROFILE:
        bullet = "- " if bullets else ""
        entries = [f"{bullet}{label}: {text}" for label, path in fields if (text := _text(_at(persona, *path)))]
        if entries:
            lines += [*([""] if lines else []), *([f"{title}:"] if title else []), *entries]
    return lines


def _at(record: Any, *path: str) -> Any:
    for key in path:
        record = record.get(key) if isinstance(record, dict) else None
    return record


def _text(value: Any) -> str:
    """A persona value on one line: a list comma separated, a Big Five trait by its description."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_text(item) for item in value)
    if isinstance(value, dict):
        return _text(value["description"]) if "description" in value else ", ".join(
            f"{key.replace('_', ' ')} {_text(item)}" for key, item in value.items())
    return str(value)


def load_scenarios(source: str | Path, *, hub_split: str | None = None) -> list[Scenario]:
    """Every scenario of a reference JSONL file (or .json list / .parquet), or of a hub dataset such as
    `stellalisy/prefq-bench`; metadata rows are skipped. Raises DataError at the first row that breaks the schema."""
    scenarios: list[Scenario] = []
    seen: dict[str, int] = {}
    file_task = None
    for line, row in enumerate(read_rows(source, hub_split=hub_split)):
        if isinstance(row, dict) and row.get("type") == "metadata":
            file_task = str(row["task"]) if row.get("task") else None
            continue
        scenario = parse_scenario(row, str(source), line, file_task)
        if scenario.scenario_id in seen:
            raise DataError(source, line, "problem_id", f"scenario {scenario.scenario_id} repeats line "
                            f"{seen[scenario.scenario_id]}", "give each persona of a problem its own persona id")
        seen[scenario.scenario_id] = line
        scenarios.append(scenario)
    if not scenarios:
        raise DataError(source, None, None, "no personalized_problem rows")
    return _with_assumed_tasks(scenarios, source)


def _with_assumed_tasks(scenarios: list[Scenario], source: str | Path) -> list[Scenario]:
    """The scenarios, those whose data names no task given one (module docstring), with a warning."""
    untasked = [s for s in scenarios if not s.task]
    if not untasked:
        return scenarios
    by_prefix = all("-" in s.problem_id for s in untasked)
    file_task = Path(str(source)).stem
    assumed = {s.scenario_id: s.problem_id.split("-", 1)[0] if by_prefix else file_task for s in untasked}
    logger.warning("%s: %d scenario(s) name no task (no 'task' in the row or the metadata line): assumed %s", source,
                   len(untasked), f"their problem ids' prefixes ({', '.join(sorted(set(assumed.values())))})"
                   if by_prefix else f"one task for the file, '{file_task}'")
    return [replace(s, task=assumed[s.scenario_id]) if s.scenario_id in assumed else s for s in scenarios]


MIN_PROBLEMS_TO_SPLIT = 3


def split_scenarios(scenarios: list[Scenario], split: str, *, val_share: float, test_share: float,
                    source: str | Path) -> list[Scenario]:
    """The scenarios of `split`: within each task, the problems (sorted by id) are split so that the last ones are
    test and the ones before them validation (each at least one, in tasks of 3 problems or more; smaller tasks are all
    train); all personas of a problem stay in one split. An empty split is a DataError naming `source` and saying what
    it holds."""
    wanted: set[str] = set()
    for task in sorted({s.task for s in scenarios}):
        problems = sorted({s.problem_id for s in scenarios if s.task == task})
        held_out = len(problems) >= MIN_PROBLEMS_TO_SPLIT
        test = max(1, round(len(problems) * test_share)) if held_out else 0
        val = max(1, round(len(problems) * val_share)) if held_out else 0
        cut = max(len(problems) - test - val, 0)
        parts = {"train": problems[:cut], "val": problems[cut:len(problems) - test],
                 "test": problems[len(problems) - test:]}
        wanted.update(parts[split])
    chosen = [s for s in scenarios if s.problem_id in wanted]
    if not chosen:
        raise _empty_split(split, scenarios, source)
    return chosen


def _empty_split(name: str, scenarios: list[Scenario], source: str | Path) -> DataError:
    problems = Counter(task for task, _ in {(s.task, s.problem_id) for s in scenarios})
    sizes = ", ".join(f"{task}: {count}" for task, count in sorted(problems.items())[:5])
    return DataError(
        source, None, "task",
        f"no scenarios in split '{name}': {len(scenarios)} scenario(s) in {len(problems)} task(s); a task's problems "
        f"are split into train, val and test only from {MIN_PROBLEMS_TO_SPLIT} problems on (problems per task: "
        f"{sizes}{', ...' if len(problems) > 5 else ''})",
        "name each row's task (a 'task' key in the row or the file's metadata line), with 3 problems or more per task, "
        "or use --split all")


def parse_scenario(row: Any, source: str, line: int, file_task: str | None = None) -> Scenario:
    """One scenario row; its task is the row's, else `file_task` (from the metadata line), else empty."""
    if not isinstance(row, dict):
        raise DataError(source, line, None, f"expected an object, got {type(row).__name__}")
    try:
        parsed = _ScenarioRow.model_validate(row)
    except ValidationError as error:
        issue = error.errors()[0]
        raise DataError(source, line, ".".join(map(str, issue["loc"])), issue["msg"]) from None
    question, answer = normalize_problem(parsed.original_problem, source, line)
    criteria = []
    for index, criterion in enumerate(parsed.evaluation_rubric.evaluation_criteria):
        preference = parsed.persona_preferences.get(criterion.preference)
        if preference is None:
            raise DataError(source, line, f"evaluation_rubric.evaluation_criteria.{index}.preference",
                            f"'{criterion.preference}' is not among persona_preferences")
        value_range = preference.value_range
        criteria.append(Criterion(
            criterion.preference, criterion.description or preference.description, preference.value,
            criterion.weight, tuple((level.score, level.description) for level in criterion.levels),
            tuple(value_range) if isinstance(value_range, list) else ((value_range,) if value_range else ()),
            preference.local_importance, preference.justification))
    total = sum(criterion.weight for criterion in criteria)
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise DataError(source, line, "evaluation_rubric.evaluation_criteria.weight",
                        f"weights sum to {total:.3f}, not 1", "weights are local_importance / their sum")
    persona_id = parsed.persona.get("persona_id", parsed.persona.get("id", line))
    problem_id = parsed.problem_id
    task = parsed.task or file_task or ""
    return Scenario(f"{problem_id}:{persona_id}", task, problem_id, question, answer, parsed.persona, tuple(criteria))


def normalize_problem(problem: dict[str, Any], source: str, line: int) -> tuple[str, str]:
    """A source row as (question with lettered options, gold answer), for the three shapes the reference handles:
    question + choices{label, text} + answerKey; context + question + answerA.. + a 1-indexed label; problem (or
    question) + answer (+ solution)."""
    field = "original_problem"
    try:
        if "choices" in problem:
            choices = problem["choices"]
            options = [f"{label}. {text}" for label, text in zip(choices["label"], choices["text"], strict=True)]
            return _with_options(problem["question"], options), str(problem["answerKey"])
        if "answerA" in problem:
            answers = [problem[f"answer{letter}"] for letter in LETTERS if f"answer{letter}" in problem]
            options = [f"{LETTERS[index]}. {text}" for index, text in enumerate(answers)]
            question = f"{problem.get('context', '')}\n{problem['question']}".strip()
            return _with_options(question, options), LETTERS[int(problem["label"]) - 1]
        question = problem.get("problem", problem.get("question"))
        if question is None:
            raise KeyError("problem")
        return str(question), str(problem["answer"])
    except KeyError as error:
        raise DataError(source, line, f"{field}.{error.args[0]}", "missing key") from None
    except (TypeError, ValueError, IndexError) as error:
        raise DataError(source, line, field, f"unreadable problem ({type(error).__name__}: {error})") from None


def _with_options(question: str, options: list[str]) -> str:
    return question + "\n" + "\n".join(options)
