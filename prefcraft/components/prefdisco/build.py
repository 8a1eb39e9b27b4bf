"""`prefcraft prefdisco build-scenarios`: any question set with answers -> PrefDisco scenarios in the reference's JSONL.

The builder is seeded and rule-based, so the same seed always writes the same file: personas are sampled from
demographic, Big Five and expertise pools and written in the published benchmark's persona schema (name, summary,
demographics, educational profile, Big Five scores with descriptions, backstory, domain expertise), and a persona that
agrees with an earlier one on most traits is rejected as a near-duplicate (the paper samples personas from an LLM at
temperature 0.7 and rejects duplicates). Per problem, each persona gets a sparse profile: a few attributes from a
catalogue, those relevant to the problem's task (the paper classifies relevance with an LLM), each with its description,
its possible values, the value this persona holds, an importance 1-5, a justification naming the trait it follows from,
and a three-level rubric; weights are importance / their sum, as in the reference.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from prefcraft.components.component import StepRun
from prefcraft.components.prefdisco.options import BuildOptions
from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import read_rows
from prefcraft.tracking.runs import NOT_TRACKED, StepTracker, data_digest

logger = logging.getLogger(__name__)

SAMPLE_PROBLEMS = Path(__file__).resolve().parent / "sample" / "problems.jsonl"
BIG_FIVE = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")
LEVELS = ("low", "medium", "high")
EXPERTISE = ("novice", "intermediate", "expert")
AGE_RANGE = (18, 75)
NAMES = ("Amara Okafor", "Bruno Costa", "Chen Wei", "Dana Levi", "Emil Novak", "Farah Haddad", "Gustavo Ruiz",
         "Hana Sato", "Ivan Petrov", "Jonas Berg", "Kavya Iyer", "Lena Fischer", "Mateo Silva", "Nadia Rahman")
LOCATIONS = ("Lagos, Nigeria", "Porto, Portugal", "Chengdu, China", "Haifa, Israel", "Brno, Czechia",
             "Amman, Jordan", "Seville, Spain", "Sapporo, Japan", "Kazan, Russia", "Bergen, Norway",
             "Chennai, India", "Leipzig, Germany")
HOBBIES = ("gardening", "chess", "cycling", "baking", "birdwatching", "choir singing", "woodworking", "hiking",
           "knitting", "photography")
MOTIVATIONS = ("wants to help family members with their schoolwork", "is curious and enjoys understanding things",
               "needs the skill for work", "is preparing for an exam", "wants to feel confident in everyday decisions")
OCCUPATIONS = ("nurse", "student", "carpenter", "teacher", "accountant", "chef", "software developer", "retiree",
               "shop owner", "researcher")
EDUCATION = ("high school", "vocational training", "bachelor's degree", "master's degree", "doctorate")
TASKS = ("math", "science", "social")
TASK_NAMES = {"math": "math", "science": "science", "social": "social situations"}
LEVEL_SCORES = {"low": 2, "medium": 3, "high": 4}
# How each Big Five level reads in a persona, and the learning traits that follow from openness, conscientiousness
# and neuroticism.
TRAIT_DESCRIPTIONS = {
    "openness": {"low": "prefers familiar, proven ways of doing things", "medium": "open to new ideas when they are "
                 "clearly useful", "high": "curious, enjoys unusual ideas and comparisons"},
    "conscientiousness": {"low": "relaxed about order and detail", "medium": "reasonably organized",
                          "high": "careful, organized and thorough"},
    "extraversion": {"low": "reserved, prefers to think things through alone", "medium": "sociable in small groups",
                     "high": "outgoing, thinks aloud with others"},
    "agreeableness": {"low": "blunt and sceptical", "medium": "cooperative", "high": "warm and eager to help"},
    "neuroticism": {"low": "calm under pressure", "medium": "sometimes anxious about mistakes",
                    "high": "often worried about getting things wrong"},
}
LEARNING_STYLES = {"low": "learns from one worked method at a time", "medium": "learns from a method and an example",
                   "high": "learns by exploring ideas, examples and analogies"}
PROBLEM_SOLVING = {"low": "jumps to an answer and checks it loosely", "medium": "works in a few clear steps",
                   "high": "breaks problems down systematically and checks each step"}
CONFIDENCE = {"low": "confident", "medium": "confident with familiar topics, unsure with new ones",
              "high": "doubts their own answers"}
ANXIETY_TRIGGERS = {"low": "few; rarely anxious", "medium": "time pressure", "high": "being wrong in front of others"}
MAX_SHARED_TRAITS = 0.75  # a persona sharing more of its traits with an earlier one is a near-duplicate
UNTRACKED = StepTracker(NOT_TRACKED)


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


@dataclass(frozen=True)
class SampledPersona:
    """A persona in the reference's schema (`record`), with the levels the preference values follow from."""

    record: dict[str, Any]
    expertise: dict[str, str]
    big_five: dict[str, str]

    def traits(self) -> list[Any]:
        """What two personas are compared on to find near-duplicates."""
        demographics = self.record["demographics"]
        return [demographics["age"] // 10, demographics["occupation"], self.record["educational_profile"]["education"],
                *self.expertise.values(), *self.big_five.values()]


@dataclass
class BuildOutcome:
    path: Path
    problems: int
    personas: int
    rejected_personas: int
    scenarios: int
    personas_per_problem: int


def problems_file(options: BuildOptions) -> Path:
    """`--problems`, or the bundled problems."""
    return options.problems or SAMPLE_PROBLEMS


def load_problems(options: BuildOptions) -> list[dict[str, Any]]:
    """The problems, read and checked before anything is built."""
    return read_problems(problems_file(options))


def build_params(options: BuildOptions, run: StepRun) -> dict[str, Any]:
    """The params of the `prefdisco-build-scenarios` run: the problems, the sampling's sizes and the seed."""
    source = problems_file(options)
    return {"problems": str(source), "data_digest": data_digest(source), "personas": options.personas,
            "personas_per_problem": options.personas_per_problem, "attributes_per_profile": options.attributes,
            "seed": run.settings.seed}


def build(options: BuildOptions, run: StepRun) -> BuildOutcome:
    """Build and write the scenarios in the run the runner opened, with a child run per task."""
    outcome = build_scenario_file(run.loaded, options, run.settings.seed, run.tracker)
    run.tracker.log_metrics({"scenarios": outcome.scenarios, "rejected_personas": outcome.rejected_personas})
    return outcome


def format_build(outcome: BuildOutcome) -> str:
    return (f"wrote {outcome.scenarios} SYNTHETIC scenarios ({outcome.problems} problems x "
            f"{outcome.personas_per_problem} of {outcome.personas} personas; {outcome.rejected_personas} "
            f"near-duplicate personas rejected) to {outcome.path}")


def build_scenario_file(problems: Sequence[dict[str, Any]], options: BuildOptions, seed: int,
                        tracker: StepTracker = UNTRACKED) -> BuildOutcome:
    """The scenarios of `problems` written to `options.output`, seeded by `seed`; a child run of the step's run per
    task counts its scenarios, and the file is logged to the step's run."""
    rng = random.Random(seed)
    personas, rejected = sample_personas(options.personas, rng)
    rows: list[dict[str, Any]] = [{"type": "metadata", "synthetic": True, "generator": "prefcraft build-scenarios",
                                   "seed": seed, "problems": len(problems), "personas": len(personas)}]
    per_task: dict[str, int] = {}
    for problem in tqdm(problems, desc="scenarios", unit="problem"):
        for persona in rng.sample(personas, options.personas_per_problem):
            rows.append(scenario_row(problem, persona, options.attributes, rng))
        per_task[problem["task"]] = per_task.get(problem["task"], 0) + options.personas_per_problem
    for task, count in per_task.items():
        with tracker.child(f"task-{task}", {"task": task}):
            tracker.log_metrics({"scenarios": count})
    path = tracker.write_results(options.output, rows)
    return BuildOutcome(path, len(problems), len(personas), rejected, len(rows) - 1, options.personas_per_problem)


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


def sample_personas(count: int, rng: random.Random, max_tries: int = 1000) -> tuple[list[SampledPersona], int]:
    """`count` personas, none a near-duplicate of an earlier one; also how many candidates were rejected."""
    personas: list[SampledPersona] = []
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


def scenario_row(problem: dict[str, Any], persona: SampledPersona, attributes: int,
                 rng: random.Random) -> dict[str, Any]:
    relevant = [attribute for attribute in CATALOGUE if problem["task"] in attribute.tasks]
    chosen = rng.sample(relevant, min(attributes, len(relevant)))
    importance = {attribute.name: rng.randint(1, 5) for attribute in chosen}
    total = sum(importance.values())
    preferences = {
        attribute.name: {"description": attribute.description, "value_range": list(attribute.values.values()),
                         "value": _value(attribute, persona, problem["task"]),
                         "local_importance": importance[attribute.name],
                         "justification": _justification(attribute, persona, problem["task"]),
                         "type": "expertise" if attribute.trait == "expertise" else "personal"}
        for attribute in chosen
    }
    criteria = [{"preference": name, "description": preference["description"],
                 "weight": round(importance[name] / total, 4), "levels": _levels(preference["value"])}
                for name, preference in preferences.items()]
    return {"type": "personalized_problem", "task": problem["task"], "problem_id": problem["problem_id"],
            "original_problem": problem["original_problem"], "persona": persona.record,
            "persona_preferences": preferences,
            "evaluation_rubric": {"evaluation_criteria": criteria}}


def _random_persona(rng: random.Random, number: int) -> SampledPersona:
    name, occupation, location = rng.choice(NAMES), rng.choice(OCCUPATIONS), rng.choice(LOCATIONS)
    age, education = rng.randint(*AGE_RANGE), rng.choice(EDUCATION)
    expertise = {task: rng.choice(EXPERTISE) for task in TASKS}
    big_five = {trait: rng.choice(LEVELS) for trait in BIG_FIVE}
    hobbies, motivation = rng.sample(HOBBIES, 2), rng.choice(MOTIVATIONS)
    knowledge = ", ".join(f"{level} in {TASK_NAMES[task]}" for task, level in expertise.items())
    record = {
        "id": f"p{number:03d}", "name": name,
        "minimal_necessary_description": f"A {age}-year-old {occupation} from {location}, {knowledge}.",
        "demographics": {"age": age, "occupation": occupation, "location": location, "hobbies": hobbies},
        "educational_profile": {
            "education": education, "knowledge_level": knowledge,
            "cognitive_features": {"learning_style": LEARNING_STYLES[big_five["openness"]],
                                   "problem_solving": PROBLEM_SOLVING[big_five["conscientiousness"]]},
            "affective_features": {"confidence": CONFIDENCE[big_five["neuroticism"]],
                                   "anxiety_triggers": ANXIETY_TRIGGERS[big_five["neuroticism"]],
                                   "motivation": motivation}},
        "personality_big5": {trait: {"score": LEVEL_SCORES[level], "description": TRAIT_DESCRIPTIONS[trait][level]}
                             for trait, level in big_five.items()},
        "backstory": f"{name} is a {occupation} in {location} (education: {education}), spends free time on "
                     f"{hobbies[0]} and {hobbies[1]}, and {motivation}.",
        "domain_expertise": [TASK_NAMES[task] for task, level in expertise.items() if level == "expert"],
    }
    return SampledPersona(record, expertise, big_five)


def _shared_traits(first: SampledPersona, second: SampledPersona) -> float:
    pairs = list(zip(first.traits(), second.traits(), strict=True))
    return sum(a == b for a, b in pairs) / len(pairs)


def _level(attribute: Attribute, persona: SampledPersona, task: str) -> str:
    return persona.expertise[task] if attribute.trait == "expertise" else persona.big_five[attribute.trait]


def _value(attribute: Attribute, persona: SampledPersona, task: str) -> str:
    return attribute.values[_level(attribute, persona, task)]


def _justification(attribute: Attribute, persona: SampledPersona, task: str) -> str:
    """Why this persona holds the value: the trait level it follows from, in the persona's words."""
    level = _level(attribute, persona, task)
    if attribute.trait == "expertise":
        return f"{persona.record['name']} is {level} in {TASK_NAMES[task]}."
    return f"{persona.record['name']} is {TRAIT_DESCRIPTIONS[attribute.trait][level]} ({level} {attribute.trait})."


def _levels(value: str) -> list[dict[str, Any]]:
    return [{"score": 1, "description": f"ignores or contradicts '{value}'"},
            {"score": 3, "description": f"partly gives '{value}'"},
            {"score": 5, "description": f"fully gives '{value}'"}]
