"""SYNTHETIC data for a rehearsal (`prefcraft experiment rehearse`): each paper-scale file's data written in the layout
its loaders read, at the paper's size times `scale`, seeded, with texts of realistic length so that prompt sizes mean
something. Nothing here is a benchmark: the rows only have the shape, the count and the length of the released ones.

Sizes, the papers' (../shared/REFERENCE.md): PRISM 723 users, 16,705 pairs, users split 280 / 65 / 378 into the hub's
train / validation / test splits; CUPID 756 instances (252 personas x 3 instance types); LaMP-QA 767 / 989 / 1,074
test questions per category (its Table 1), post descriptions of about 157 words on average with a long tail;
PrefDisco ten tasks x 1,000 scenarios (or the step's `max_per_task`); SenseBench 1,000 labelled pairs, 125 per topic, 8
topics, one file per annotator. Each component's generate.py makes the rows where it can.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from prefcraft.components.cupid import generate as cupid_rows
from prefcraft.components.lampqa import generate as lampqa_rows
from prefcraft.components.lampqa.data import CONFIGS as LAMPQA_CONFIGS
from prefcraft.components.lampqa.data import DATA_SPLITS as LAMPQA_SPLITS
from prefcraft.components.prefdisco import build as prefdisco_rows
from prefcraft.components.synthesizeme import generate as prism_rows
from prefcraft.errors import ConfigError
from prefcraft.experiments.files import Experiment

PRISM_USERS = {"train": 280, "validation": 65, "test": 378}
PRISM_PAIRS = 16_705
PRISM_PAIR_SPLITS = (("train", 0.5), ("val", 0.25), ("test", 0.25))  # of each user's pairs, in row order
RELEASED_DEMOS = 6
RELEASED_DEMO_CHARS = 14_000  # six demos of 80,000-90,000 characters in all, as the released llama8b.json
CUPID_PERSONAS = 252
LAMPQA_TEST_QUESTIONS = dict(zip(LAMPQA_CONFIGS, (767, 989, 1_074), strict=True))
LAMPQA_DESCRIPTION_WORDS = 157  # Table 1: 145-169 words on average, standard deviation about 145
PREFDISCO_TASKS = {"math": "math", "aime": "math", "mascqa": "math", "commonsenseqa": "social",
                   "socialiqa": "social", "logiqa": "science", "medqa": "science", "mmlu": "science",
                   "scienceqa": "science", "simpleqa": "science"}
"""The benchmark's ten tasks, each with the builder's kind of task whose attributes its profiles draw on."""
PREFDISCO_SCENARIOS = 1_000
PREFDISCO_PERSONAS_PER_PROBLEM = 10
SENSE_TOPICS = ("Code", "Logic", "Math", "NLU", "QA", "Role", "Translation", "Writing")
SENSE_PAIRS_PER_TOPIC = 125
SENSE_ANNOTATORS = (1, 2, 3)
MANIFEST = "rehearsal-data.json"  # what was written, for a resumed rehearsal

WORDS = ("the plan", "each step", "a simple rule", "this approach", "the first option", "my experience",
         "the result", "a small change", "the main idea", "every detail", "the schedule", "a careful check")
VERBS = ("depends on", "works better with", "leaves room for", "is easier after", "often fails without",
         "should start from", "needs", "keeps track of", "makes sense given", "can replace")
ENDINGS = ("the time you have.", "a clear goal.", "what you already know.", "a second look.", "some practice.",
           "the budget you set.", "a quiet evening.", "the people involved.", "a written list.", "real feedback.")


def prose(rng: random.Random, words: int) -> str:
    """About `words` words of plain sentences: filler of a realistic length, not of realistic meaning."""
    sentences, count = [], 0
    while count < words:
        sentence = f"{rng.choice(WORDS).capitalize()} {rng.choice(VERBS)} {rng.choice(ENDINGS)}"
        sentences.append(sentence)
        count += len(sentence.split())
    return " ".join(sentences)


def scaled(full: int, scale: float, least: int = 1) -> int:
    return max(least, round(full * scale))


@dataclass(frozen=True)
class RehearsalData:
    """What was written, and the step options that read it instead of the file's values."""

    options: dict[str, dict[str, str]]
    """step -> option -> the generated file or folder."""
    items: dict[str, int]
    """What was written, counted: users, pairs, instances, questions, scenarios."""
    share: float
    """The share of the paper's size written, in the items the paper counts (test users, instances, questions,
    scenarios, pairs): what the file's cost estimate is multiplied by."""


def write_data(experiment: Experiment, folder: Path, scale: float, seed: int = 0) -> RehearsalData:
    """The experiment's data, in `folder`, at the paper's size times `scale`."""
    if not 0 < scale <= 1:
        raise ConfigError(f"--scale {scale}: a share of the paper's size, above 0 and at most 1")
    writer = WRITERS.get(experiment.component)
    if writer is None:
        raise ConfigError(f"{experiment.component}: no rehearsal data for this component",
                          f"rehearse a file of {', '.join(WRITERS)}")
    folder.mkdir(parents=True, exist_ok=True)
    return writer(experiment, folder, scale, random.Random(seed))


def reuse_or_write(experiment: Experiment, folder: Path, scale: float, seed: int = 0) -> RehearsalData:
    """The data a killed rehearsal wrote in `folder` (its manifest says what), for a resumed one to read the same
    files; written afresh where there is none."""
    manifest = folder / MANIFEST
    if not manifest.exists():
        data = write_data(experiment, folder, scale, seed)
        manifest.write_text(json.dumps({"scale": scale, "seed": seed, **asdict(data)}), encoding="utf-8")
        return data
    written = json.loads(manifest.read_text(encoding="utf-8"))
    first = (written.pop("scale"), written.pop("seed"))
    if first != (scale, seed):
        raise ConfigError(f"{manifest}: the data there is at scale {first[0]:g} (seed {first[1]}), not {scale:g} "
                          f"(seed {seed})", f"resume with --scale {first[0]:g}, or give a new --work-dir")
    return RehearsalData(**written)


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def _steps_with(experiment: Experiment, option: str) -> list[str]:
    return [step for step, given in experiment.steps.items() if option in given]


# SynthesizeMe: PersonalRewardBench's PRISM split files, the PRISM survey, a released persona prompt.

def prism_user(rng: random.Random, user_id: str) -> prism_rows.User:
    dimensions = rng.sample(sorted(prism_rows.DIMENSIONS), rng.choice((1, 2)))
    preferences = {dimension: rng.choice(prism_rows.DIMENSIONS[dimension]) for dimension in dimensions}
    rule = " and ".join(f"{dimension} {pole.replace('_', ' ')}" for dimension, pole in preferences.items())
    return prism_rows.User(user_id, preferences, f"Prefers answers with {rule}.")


def prism_user_rows(rng: random.Random, user: prism_rows.User, pairs: int) -> list[dict[str, Any]]:
    """One user's `pairs` rows, each split as PRISM_PAIR_SPLITS cuts them in row order (train first)."""
    cuts = [max(1, round(pairs * share)) for _, share in PRISM_PAIR_SPLITS[:-1]]
    splits = [name for (name, _), size in zip(PRISM_PAIR_SPLITS, [*cuts, pairs - sum(cuts)], strict=True)
              for _ in range(size)]
    multi_turn = set(rng.sample(range(pairs), pairs // 4))
    return [prism_rows.build_pair(user, index, split, rng.choice(prism_rows.TOPICS), index in multi_turn, rng)
            for index, split in enumerate(splits)]


def survey_row(rng: random.Random, user_id: str) -> dict[str, Any]:
    country = rng.choice(("United Kingdom", "United States", "Canada", "Australia", "Germany", "Mexico", "Chile"))
    return {"user_id": user_id, "age": rng.choice(("18-24 years old", "25-34 years old", "35-44 years old",
                                                   "45-54 years old", "55-64 years old")),
            "gender": rng.choice(("Female", "Male", "Non-binary / third gender")),
            "employment_status": rng.choice(("Working full-time", "Working part-time", "Student", "Retired")),
            "education": rng.choice(("University Bachelors Degree", "Graduate / Professional degree",
                                     "Completed Secondary School")),
            "marital_status": rng.choice(("Never been married", "Married", "Divorced / Separated")),
            "location": {"birth_country": country, "reside_country": country},
            "religion": {"self_described": rng.choice(("Christian", "No religion", "Jewish", "Muslim"))},
            "ethnicity": {"self_described": rng.choice(("White", "Black / African", "Asian", "Mixed"))}}


def released_persona_prompt(rng: random.Random) -> dict[str, Any]:
    """A persona program in the layout of SALT-NLP/SynthesizeMe's synthesizeme/prompts/*.json (DSPy 2.6)."""
    demos = [{"augmented": True, "past_judgements": prose(rng, RELEASED_DEMO_CHARS // 6),
              "reasoning": prose(rng, 120), "synthesized_persona": prose(rng, 150)} for _ in range(RELEASED_DEMOS)]
    fields = [{"prefix": "Past Judgements:", "description": "the user's past judgments"},
              {"prefix": "Reasoning:", "description": "think step by step"},
              {"prefix": "Synthesized Persona:", "description": "the user's persona"}]
    return {"synthesize.predict": {"lm": None, "traces": [], "train": [], "demos": demos,
                                   "signature": {"instructions": prose(rng, 200), "fields": fields}},
            "metadata": {"dependency_versions": {"python": "3.12", "dspy": "2.6.12", "cloudpickle": "3.1"}}}


def write_synthesizeme(experiment: Experiment, folder: Path, scale: float, rng: random.Random) -> RehearsalData:
    from datasets import Dataset  # the hub stores PersonalRewardBench as parquet split files

    pairs_per_user = PRISM_PAIRS / sum(PRISM_USERS.values())
    dataset, items, survey = folder / "prism_personalized_0125", {"users": 0, "pairs": 0}, []
    for population, full in PRISM_USERS.items():
        rows = []
        for number in range(scaled(full, scale)):
            user = prism_user(rng, f"{population}-user{number:04d}")
            rows += prism_user_rows(rng, user, max(3, round(rng.gauss(pairs_per_user, 6))))
            survey.append(survey_row(rng, user.user_id))
        dataset.mkdir(parents=True, exist_ok=True)
        Dataset.from_list(rows).to_parquet(str(dataset / f"{population}-00000-of-00001.parquet"))
        items["users"] += len({row["user_id"] for row in rows})
        items["pairs"] += len(rows)
    options: dict[str, dict[str, str]] = {step: {"data": str(dataset)} for step in _steps_with(experiment, "data")}
    for step in _steps_with(experiment, "demographics"):
        options[step]["demographics"] = str(write_jsonl(folder / "prism_survey.jsonl", survey))
    for step in _steps_with(experiment, "released"):
        released = folder / "released_persona_prompt.json"
        released.write_text(json.dumps(released_persona_prompt(rng)), encoding="utf-8")
        options.setdefault(step, {})["released"] = str(released)
    return RehearsalData(options, items, scaled(PRISM_USERS["test"], scale) / PRISM_USERS["test"])


# CUPID: the hub's instances, one file.

def cupid_instances(rng: random.Random, personas: int) -> list[dict[str, Any]]:
    """Three instances per persona from the generator's personas in turn, each assistant turn lengthened to a
    realistic reply."""
    rows = []
    for number in range(personas):
        persona = replace(cupid_rows.PERSONAS[number % len(cupid_rows.PERSONAS)], persona_id=f"persona_{number:03d}")
        rows += cupid_rows.persona_instances(rng, persona)
    for row in rows:
        for session in row["prior_interactions"]:
            for turn in session["dialogue"]:
                if turn["role"] == "assistant":
                    turn["content"] += " " + prose(rng, rng.randint(120, 320))
    return rows


def write_cupid(experiment: Experiment, folder: Path, scale: float, rng: random.Random) -> RehearsalData:
    rows = cupid_instances(rng, scaled(CUPID_PERSONAS, scale))
    path = write_jsonl(folder / "cupid.jsonl", rows)
    return RehearsalData({step: {"data": str(path)} for step in _steps_with(experiment, "data")},
                         {"instances": len(rows)}, len(rows) / (3 * CUPID_PERSONAS))


# LaMP-QA: <folder>/<config>/<split>.jsonl, the hub's three categories.

def lampqa_question(rng: random.Random, config: str, question_id: str) -> dict[str, Any]:
    """A generator's question whose every post carries a description of the paper's length (heavy-tailed)."""
    row = lampqa_rows.make_question(rng, config, question_id)
    for post in row["profile"]:
        words = min(2_000, round(rng.lognormvariate(4.73, 0.8)))  # mean about 157 words, a long tail
        post["text"] += " " + prose(rng, words)
    return row


def write_lampqa(experiment: Experiment, folder: Path, scale: float, rng: random.Random) -> RehearsalData:
    dataset, questions = folder / "LaMP-QA", 0
    splits = {LAMPQA_SPLITS[str(experiment.steps[step].get("split", "test"))]
              for step in _steps_with(experiment, "data")} or {"test"}
    for config, full in LAMPQA_TEST_QUESTIONS.items():
        for split in sorted(splits):
            rows = [lampqa_question(rng, config, f"{config}-{split}-{number:04d}")
                    for number in range(scaled(full, scale))]
            write_jsonl(dataset / config / f"{split}.jsonl", rows)
            questions += len(rows)
    return RehearsalData({step: {"data": str(dataset)} for step in _steps_with(experiment, "data")},
                         {"questions": questions}, questions / len(splits) / sum(LAMPQA_TEST_QUESTIONS.values()))


# PrefDisco: benchmark_1k/<task>/<task>.jsonl, ten tasks.

def prefdisco_problem(rng: random.Random, task: str, number: int) -> dict[str, Any]:
    answer = str(rng.randint(2, 999))
    return {"task": PREFDISCO_TASKS[task], "problem_id": f"problem_{number}",
            "original_problem": {"problem": f"{prose(rng, rng.randint(40, 160))} What is the value asked for?",
                                 "solution": f"{prose(rng, rng.randint(60, 200))} So the answer is {answer}.",
                                 "answer": answer}}


def write_prefdisco(experiment: Experiment, folder: Path, scale: float, rng: random.Random) -> RehearsalData:
    per_task = min([PREFDISCO_SCENARIOS] + [int(experiment.steps[step]["max_per_task"])
                                            for step in _steps_with(experiment, "max_per_task")])
    scenarios = scaled(per_task, scale)
    problems = -(-scenarios // PREFDISCO_PERSONAS_PER_PROBLEM)
    personas, _ = prefdisco_rows.sample_personas(100, rng)
    root, written = folder / "prefq-bench", 0
    for task in PREFDISCO_TASKS:
        rows: list[dict[str, Any]] = [{"type": "metadata", "task": task, "synthetic": True}]
        for number in range(problems):
            problem = prefdisco_problem(rng, task, number)
            for persona in rng.sample(personas, PREFDISCO_PERSONAS_PER_PROBLEM):
                row = prefdisco_rows.scenario_row(problem, persona, rng.randint(2, 5), rng)
                rows.append(row | {"task": task, "problem_id": f"{problem['problem_id']}_{persona.record['id']}"})
        rows = rows[:1 + scenarios]
        write_jsonl(root / "benchmark_1k" / task / f"{task}.jsonl", rows)
        written += len(rows) - 1
    return RehearsalData({step: {"data": str(root)} for step in _steps_with(experiment, "data")},
                         {"scenarios": written}, written / (len(PREFDISCO_TASKS) * PREFDISCO_SCENARIOS))


# SenseJudge: the human labels, sense-label1.json to sense-label3.json.

def sense_record(rng: random.Random, topic: str, number: int) -> dict[str, Any]:
    def turn(speaker: str, words: int) -> dict[str, Any]:
        return {"from": speaker, "value": [{"type": "text", "value": prose(rng, words)}]}

    history = [turn(speaker, rng.randint(30, 200)) for _ in range(rng.choice((0, 0, 1))) for speaker in
               ("Human", "Assistant")]
    return {"prompt": [*history, turn("Human", rng.randint(20, 150))],
            "chosen": turn("Assistant", rng.randint(80, 500)), "rejected": turn("Assistant", rng.randint(80, 500)),
            "dataset": f"sense_bmk:{topic}", "id": f"{topic}-{number:03d}"}


def write_sensejudge(experiment: Experiment, folder: Path, scale: float, rng: random.Random) -> RehearsalData:
    least = max([int(experiment.steps[step].get("dev_pairs_per_topic", 10)) + 1
                 for step in _steps_with(experiment, "human_labels")] or [11])  # a topic's dev pairs and a test
    per_topic = scaled(SENSE_PAIRS_PER_TOPIC, scale, least)
    records = [sense_record(rng, topic, number) for topic in SENSE_TOPICS for number in range(per_topic)]
    labels = folder / "human_label"
    labels.mkdir(parents=True, exist_ok=True)
    for annotator in SENSE_ANNOTATORS:  # the same pairs, each annotator choosing the other response now and then
        flipped = [record | {"chosen": record["rejected"], "rejected": record["chosen"]} if rng.random() < 0.3
                   else record for record in records]
        (labels / f"sense-label{annotator}.json").write_text(json.dumps(flipped, ensure_ascii=False),
                                                             encoding="utf-8")
    return RehearsalData({step: {"human_labels": str(labels)} for step in _steps_with(experiment, "human_labels")},
                         {"pairs": len(records)}, len(records) / (len(SENSE_TOPICS) * SENSE_PAIRS_PER_TOPIC))


WRITERS: dict[str, Callable[[Experiment, Path, float, random.Random], RehearsalData]] = {
    "synthesizeme": write_synthesizeme, "cupid": write_cupid, "lampqa": write_lampqa, "prefdisco": write_prefdisco,
    "sensejudge": write_sensejudge}
