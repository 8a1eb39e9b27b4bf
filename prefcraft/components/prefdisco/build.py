"""`prefcraft prefdisco build-scenarios`: any question set with answers -> PrefDisco scenarios in the reference's JSONL.

The builder is seeded and rule-based, so the same seed always writes the same file: personas are sampled from
demographic, Big Five and expertise pools, and a persona that agrees with an earlier one on most traits is rejected
as a near-duplicate (the paper samples personas from an LLM at temperature 0.7 and rejects duplicates). Per problem,
each persona gets a sparse profile: a few attributes from a catalogue, those relevant to the problem's task (the paper
classifies relevance with an LLM), each with the value this persona holds, an importance 1-5 and a three-level
rubric; weights are importance / their sum, as in the reference.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from prefcraft.errors import DataError
from prefcraft.files import write_jsonl_atomic
from prefcraft.loaders.personal_reward_bench import read_rows
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, log_file, log_metrics, start_tracking, tracked_run

logger = logging.getLogger(__name__)

SAMPLE_PROBLEMS = Path(__file__).resolve().parent / "sample" / "problems.jsonl"
BIG_FIVE = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")
LEVELS = ("low", "medium", "high")
EXPERTISE = ("novice", "intermediate", "expert")
AGES = ("18-24", "25-34", "35-44", "45-54", "55-64", "65+")
OCCUPATIONS = ("nurse", "student", "carpenter", "teacher", "accountant", "chef", "software developer", "retiree",
               "shop owner", "researcher")
EDUCATION = ("high school", "vocational training", "bachelor's degree", "master's degree", "doctorate")
TASKS = ("math", "science", "social")
MAX_SHARED_TRAITS = 0.75  # a persona sharing more of its traits with an earlier one is a near-duplicate


@dataclass(frozen=True)
class Attribute:
    """A preference a user may hold, the tasks it matters for, and the value held at each level of one trait."""

    name: str
    description: str
    tasks: tuple[str, ...]
    trait: str
    values: dict[str, str]


CATALOGUE = (
    Attribute("detail_level", "how much explanation the answer gives", TASKS, "expertise",
              {"novice": "every step explained in plain words", "intermediate": "the main steps, briefly explained",
               "expert": "only the key result, no explanation"}),
    Attribute("notation", "how calculations are written", ("math", "science"), "expertise",
              {"novice": "words rather than symbols", "intermediate": "simple equations with a word or two",
               "expert": "compact symbolic notation"}),
    Attribute("examples", "whether everyday examples are used", TASKS, "openness",
              {"low": "no examples", "medium": "one short example", "high": "a vivid everyday example or analogy"}),
    Attribute("structure", "how the answer is laid out", TASKS, "conscientiousness",
              {"low": "a short free paragraph", "medium": "a few sentences in logical order",
               "high": "a numbered list of steps"}),
    Attribute("tone", "the voice of the answer", TASKS, "agreeableness",
              {"low": "neutral and matter-of-fact", "medium": "polite and friendly", "high": "warm and encouraging"}),
    Attribute("reassurance", "whether the answer addresses worry about being wrong", ("math", "social"),
              "neuroticism", {"low": "no reassurance", "medium": "a brief note that the method is reliable",
                              "high": "explicit reassurance and a way to check the answer"}),
    Attribute("perspectives", "whether the answer considers several people's views", ("social",), "extraversion",
              {"low": "a single recommendation", "medium": "the main person's view and the recommendation",
               "high": "every person's feelings before recommending"}),
)


@dataclass
class BuildJob:
    problems: Path = SAMPLE_PROBLEMS
    output: Path = Path("runs/prefdisco/scenarios.jsonl")
    personas: int = 8
    personas_per_problem: int = 2
    attributes_per_profile: int = 2
    seed: int = 0


@dataclass
class BuildOutcome:
    path: Path
    problems: int
    personas: int
    rejected_personas: int
    scenarios: int


def run_build(settings: Settings, job: BuildJob, emit: Callable[[str], None]) -> BuildOutcome:
    """Build and write the scenarios in one MLflow run, with a child run per task."""
    problems = read_problems(job.problems)
    start_tracking(settings)
    params = {"problems": str(job.problems), "data_digest": data_digest(job.problems), "personas": job.personas,
              "personas_per_problem": job.personas_per_problem,
              "attributes_per_profile": job.attributes_per_profile, "seed": job.seed}
    with tracked_run("prefdisco-build-scenarios", params):
        outcome = build_scenario_file(problems, job, on_task=_log_task)
        log_metrics({"scenarios": outcome.scenarios, "rejected_personas": outcome.rejected_personas})
        log_file(outcome.path)
    emit(f"wrote {outcome.scenarios} SYNTHETIC scenarios ({outcome.problems} problems x "
         f"{job.personas_per_problem} of {outcome.personas} personas; {outcome.rejected_personas} near-duplicate "
         f"personas rejected) to {outcome.path}")
    return outcome


def build_scenario_file(problems: Sequence[dict[str, Any]], job: BuildJob,
                        on_task: Callable[[str, int], None] | None = None) -> BuildOutcome:
    rng = random.Random(job.seed)
    personas, rejected = sample_personas(job.personas, rng)
    rows: list[dict[str, Any]] = [{"type": "metadata", "synthetic": True, "generator": "prefcraft build-scenarios",
                                   "seed": job.seed, "problems": len(problems), "personas": len(personas)}]
    per_task: dict[str, int] = {}
    for problem in tqdm(problems, desc="scenarios", unit="problem"):
        for persona in rng.sample(personas, job.personas_per_problem):
            rows.append(scenario_row(problem, persona, job.attributes_per_profile, rng))
        per_task[problem["task"]] = per_task.get(problem["task"], 0) + job.personas_per_problem
    for task, count in per_task.items():
        if on_task:
            on_task(task, count)
    path = write_jsonl_atomic(job.output, rows)
    return BuildOutcome(path, len(problems), len(personas), rejected, len(rows) - 1)


def read_problems(source: Path) -> list[dict[str, Any]]:
    """Rows `{"task": math|science|social, "problem_id", "original_problem": {...}}` (the source row, as kept)."""
    problems = list(read_rows(source))
    for line, row in enumerate(problems):
        for field in ("task", "problem_id", "original_problem"):
            if not isinstance(row, dict) or field not in row:
                raise DataError(source, line, field, "missing field", "rows are {task, problem_id, original_problem}")
        if row["task"] not in TASKS:
            raise DataError(source, line, "task", f"'{row['task']}' is not one of {', '.join(TASKS)}")
    return problems


def sample_personas(count: int, rng: random.Random, max_tries: int = 1000) -> tuple[list[dict[str, Any]], int]:
    """`count` personas, none a near-duplicate of an earlier one; also how many candidates were rejected."""
    personas: list[dict[str, Any]] = []
    rejected = 0
    for _ in range(max_tries):
        if len(personas) == count:
            return personas, rejected
        candidate = _random_persona(rng, len(personas))
        if any(_shared_traits(candidate, kept) > MAX_SHARED_TRAITS for kept in personas):
            rejected += 1
            continue
        personas.append(candidate)
    raise ValueError(f"only {len(personas)} distinct personas in {max_tries} tries; ask for fewer")


def scenario_row(problem: dict[str, Any], persona: dict[str, Any], attributes: int,
                 rng: random.Random) -> dict[str, Any]:
    relevant = [attribute for attribute in CATALOGUE if problem["task"] in attribute.tasks]
    chosen = rng.sample(relevant, min(attributes, len(relevant)))
    importance = {attribute.name: rng.randint(1, 5) for attribute in chosen}
    total = sum(importance.values())
    preferences = {
        attribute.name: {"description": attribute.description, "value_range": list(attribute.values.values()),
                         "value": _value(attribute, persona, problem["task"]),
                         "local_importance": importance[attribute.name],
                         "justification": f"follows from the persona's {attribute.trait}",
                         "type": "expertise" if attribute.trait == "expertise" else "personal"}
        for attribute in chosen
    }
    criteria = [{"preference": name, "description": preference["description"],
                 "weight": round(importance[name] / total, 4), "levels": _levels(preference["value"])}
                for name, preference in preferences.items()]
    return {"type": "personalized_problem", "task": problem["task"], "problem_id": problem["problem_id"],
            "original_problem": problem["original_problem"], "persona": persona, "persona_preferences": preferences,
            "evaluation_rubric": {"evaluation_criteria": criteria}}


def _random_persona(rng: random.Random, number: int) -> dict[str, Any]:
    occupation = rng.choice(OCCUPATIONS)
    expertise = {task: rng.choice(EXPERTISE) for task in TASKS}
    big_five = {trait: rng.choice(LEVELS) for trait in BIG_FIVE}
    return {"persona_id": f"p{number:03d}",
            "demographics": {"age": rng.choice(AGES), "occupation": occupation},
            "educational_profile": rng.choice(EDUCATION), "domain_expertise": expertise,
            "personality_big5": big_five,
            "backstory": f"A {occupation}, {big_five['openness']} in openness, with {expertise['math']} math skills."}


def _traits(persona: dict[str, Any]) -> list[Any]:
    return [*persona["demographics"].values(), persona["educational_profile"], *persona["domain_expertise"].values(),
            *persona["personality_big5"].values()]


def _shared_traits(first: dict[str, Any], second: dict[str, Any]) -> float:
    pairs = list(zip(_traits(first), _traits(second), strict=True))
    return sum(a == b for a, b in pairs) / len(pairs)


def _value(attribute: Attribute, persona: dict[str, Any], task: str) -> str:
    level = (persona["domain_expertise"][task] if attribute.trait == "expertise"
             else persona["personality_big5"][attribute.trait])
    return attribute.values[level]


def _levels(value: str) -> list[dict[str, Any]]:
    return [{"score": 1, "description": f"ignores or contradicts '{value}'"},
            {"score": 3, "description": f"partly gives '{value}'"},
            {"score": 5, "description": f"fully gives '{value}'"}]


def _log_task(task: str, scenarios: int) -> None:
    with tracked_run(f"task-{task}", {"task": task}, nested=True):
        log_metrics({"scenarios": scenarios})
