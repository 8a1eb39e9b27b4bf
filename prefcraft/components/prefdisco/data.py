"""PrefDisco scenarios in the reference's JSONL format (stellalisy/PrefDisco), from a local file, a local folder in
the hub dataset's layout, or the hub dataset by name (read as that folder: `hub.benchmark_snapshot`).

A file's first line is `{"type": "metadata", ...}`; each further line is `{"type": "personalized_problem",
"problem_id", "original_problem", "persona", "persona_preferences", "evaluation_rubric"}`. `original_problem` is the
source row of the task's dataset, so its keys vary; `sources.normalize_problem` reads every task's shape as the
reference does. The criteria's weights should sum to 1 (± 0.05): a row off by more is kept with a warning, as the
reference's generator keeps it; a `local_importance` outside 1-5 is kept with a warning, as the reference's evaluator
never reads it; a criterion that names no preference of the row (the reference's grader fails on it) and a repeated
scenario (its `scripts/validate_benchmark.py` rejects a repeated problem id) are errors; extra keys are ignored.
Errors name the file, the line (0-based, the metadata line included) and the field.

`stellalisy/prefq-bench` holds a folder per task (`benchmark_1k/<task>/*.jsonl`; `benchmark_5k/` holds larger
variants of four tasks). A local folder, and the snapshot of a hub dataset given by name (a source that is neither a
local path nor a .jsonl/.json/.parquet file's name), is read in that layout: its `benchmark_1k/` when it has one (a
snapshot of the whole dataset: the paper's ten tasks), else the folder itself; every `.jsonl` file under it, in name
order, is one task's, named by its folder. As the persona library and the problem numbering are shared by the tasks, a
folder's problem ids are prefixed with its task (`math/problem_3`).

The reference's problem ids are `problem_<index>_<persona id>`, one per scenario: a problem id ending in `_<persona
id>` is read without it, so that all personas of one problem share its id (and its split).

A scenario's task is its row's `task`, else the `task` of the metadata line above it, else its folder's (the reference
keeps one task per file). Without any, a warning says what was assumed: the problem ids' prefixes up to '-' when every
id has one, else one task for the whole file.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from prefcraft.components.prefdisco.hub import HUB_BENCHMARK, HUB_DATASET, benchmark_snapshot
from prefcraft.components.prefdisco.sources import UnreadableProblemError, normalize_problem
from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import ROW_FILE_SUFFIXES, read_rows

logger = logging.getLogger(__name__)

SAMPLE_SCENARIOS = Path(__file__).resolve().parent / "sample" / "scenarios.jsonl"
WEIGHT_TOLERANCE = 0.05
IMPORTANCE_SCALE = range(1, 6)


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
    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)  # values are often on a 1-5 scale

    description: str = ""
    value_range: list[str] | str = ""
    value: str
    local_importance: int
    justification: str = ""
    type: str = "personal"


class _ScenarioRow(BaseModel):
    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    type: Literal["personalized_problem"]
    task: str | None = None
    problem_id: str
    persona: dict[str, Any]
    persona_preferences: dict[str, _Preference] = Field(min_length=1)
    evaluation_rubric: _Rubric

    @field_validator("persona_preferences", mode="before")
    @classmethod
    def _present(cls, value: Any) -> Any:
        """Without the None entries that rows read through Arrow carry for every other row's preferences."""
        return {name: item for name, item in value.items() if item is not None} if isinstance(value, dict) else value


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
    solution: str = ""
    """The source's worked solution (ScienceQA's lecture and solution, MATH's solution), if any; no model reads it."""

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


def load_scenarios(source: str | Path) -> list[Scenario]:
    """Every scenario of a reference JSONL file (or .json list / .parquet), of a local folder in the hub dataset's
    layout, or of a hub dataset such as `stellalisy/prefq-bench`; metadata rows are skipped. Raises DataError at the
    first row that breaks the schema."""
    scenarios: list[Scenario] = []
    seen: dict[str, tuple[str, int]] = {}
    for name, rows, folder in _files_to_read(source):
        file_task = folder
        for line, row in enumerate(rows):
            if isinstance(row, dict) and row.get("type") == "metadata":
                file_task = str(row["task"]) if row.get("task") else folder
                continue
            scenario = parse_scenario(row, name, line, file_task, f"{folder}/" if folder else "")
            if scenario.scenario_id in seen:
                first_name, first_line = seen[scenario.scenario_id]
                raise DataError(name, line, "problem_id", f"scenario {scenario.scenario_id} repeats line {first_line}"
                                f"{f' of {first_name}' if first_name != name else ''}",
                                "give each persona of a problem its own persona id")
            seen[scenario.scenario_id] = (name, line)
            scenarios.append(scenario)
    if not scenarios:
        raise DataError(source, None, None, "no personalized_problem rows")
    if unanswered := sum(not s.answer for s in scenarios):
        logger.warning("%s: %d scenario(s) have an empty gold answer (set but empty in the source row, as in "
                       "CommonsenseQA's test split): the correctness judge compares them with nothing", source,
                       unanswered)
    return _with_assumed_tasks(scenarios, source)


def _files_to_read(source: str | Path) -> list[tuple[str, Iterable[Any], str | None]]:
    """(name, rows, folder) per file to read: a folder's task files (module docstring), a hub dataset's as its
    snapshot folder's, else `source` itself."""
    path = Path(source)
    if path.is_dir():
        return _task_files(path)
    if path.exists() or path.suffix in ROW_FILE_SUFFIXES:
        return [(str(source), read_rows(source), None)]
    return _task_files(benchmark_snapshot(str(source)))


def _task_files(path: Path) -> list[tuple[str, Iterable[Any], str | None]]:
    root = path / HUB_BENCHMARK if (path / HUB_BENCHMARK).is_dir() else path
    files = sorted(root.rglob("*.jsonl"))
    if not files:
        raise DataError(path, None, None, "no .jsonl file in this folder",
                        f"give a scenario file, or a folder in {HUB_DATASET}'s layout ({HUB_BENCHMARK}/<task>/*.jsonl)")
    return [(str(file), read_rows(file), file.parent.name) for file in files]


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
    wanted: set[tuple[str, str]] = set()
    for task in sorted({s.task for s in scenarios}):
        problems = sorted({s.problem_id for s in scenarios if s.task == task})
        held_out = len(problems) >= MIN_PROBLEMS_TO_SPLIT
        test = max(1, round(len(problems) * test_share)) if held_out else 0
        val = max(1, round(len(problems) * val_share)) if held_out else 0
        cut = max(len(problems) - test - val, 0)
        parts = {"train": problems[:cut], "val": problems[cut:len(problems) - test],
                 "test": problems[len(problems) - test:]}
        wanted.update((task, problem) for problem in parts[split])
    chosen = [s for s in scenarios if (s.task, s.problem_id) in wanted]
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


def parse_scenario(row: Any, source: str, line: int, file_task: str | None = None,
                   problem_prefix: str = "") -> Scenario:
    """One scenario row; its task is the row's, else `file_task` (the metadata line's or the folder's), else empty; its
    problem id is `problem_prefix` and the row's problem id (module docstring)."""
    if not isinstance(row, dict):
        raise DataError(source, line, None, f"expected an object, got {type(row).__name__}")
    try:
        parsed = _ScenarioRow.model_validate(row)
    except ValidationError as error:
        issue = error.errors()[0]
        raise DataError(source, line, ".".join(map(str, issue["loc"])), issue["msg"]) from None
    try:
        problem = normalize_problem(row)
    except UnreadableProblemError as error:
        raise DataError(source, line, error.field, error.problem) from None
    for name, preference in parsed.persona_preferences.items():
        if preference.local_importance not in IMPORTANCE_SCALE:  # the reference's evaluator never reads it: kept
            logger.warning("%s, row %s, field persona_preferences.%s.local_importance: %d is outside 1-5; the row is "
                           "kept and the value shown as it is (PrefAlign weighs by the rubric's weights)", source,
                           line, name, preference.local_importance)
    criteria = []
    for index, criterion in enumerate(parsed.evaluation_rubric.evaluation_criteria):
        preference = parsed.persona_preferences.get(criterion.preference)
        if preference is None:
            raise DataError(source, line, f"evaluation_rubric.evaluation_criteria.{index}.preference",
                            f"'{criterion.preference}' is not among persona_preferences (the reference's grader "
                            "reads the user's value there: the row could not be graded)",
                            "name each criterion after one of the row's persona_preferences")
        value_range = preference.value_range
        criteria.append(Criterion(
            criterion.preference, criterion.description or preference.description, preference.value,
            criterion.weight, tuple((level.score, level.description) for level in criterion.levels),
            tuple(value_range) if isinstance(value_range, list) else ((value_range,) if value_range else ()),
            preference.local_importance, preference.justification))
    total = sum(criterion.weight for criterion in criteria)
    if total <= 0:
        raise DataError(source, line, "evaluation_rubric.evaluation_criteria.weight", "the weights sum to 0",
                        "weights are local_importance / their sum")
    if abs(total - 1.0) > WEIGHT_TOLERANCE:  # the reference's generator warns and keeps the row
        logger.warning("%s, line %s: the weights sum to %.3f, not 1 (± %s); PrefAlign divides by their sum", source,
                       line, total, WEIGHT_TOLERANCE)
    persona_id = str(parsed.persona.get("persona_id", parsed.persona.get("id", line)))
    problem_id = problem_prefix + (parsed.problem_id.removesuffix(f"_{persona_id}") or parsed.problem_id)
    task = parsed.task or file_task or ""
    return Scenario(f"{problem_id}:{persona_id}", task, problem_id, problem.task_text(), problem.answer, parsed.persona,
                    tuple(criteria), problem.solution)
