"""The PrefDisco scenario loader: the reference's JSONL, its problem shapes, and errors naming file, line and field."""

import json

import pytest

from prefcraft.components.prefdisco.data import SAMPLE_SCENARIOS, load_scenarios, split_scenarios
from prefcraft.errors import DataError

METADATA = {"type": "metadata", "task": "math", "extra": 1}


def scenario_row(**changes):
    row = {
        "type": "personalized_problem", "problem_id": "p1", "unused": "ignored",
        "original_problem": {"problem": "2 + 2?", "solution": "4", "answer": "4"},
        "persona": {"persona_id": "a", "demographics": {}},
        "persona_preferences": {
            "detail": {"description": "how much", "value_range": ["brief", "long"], "value": "brief",
                       "local_importance": 3, "justification": "busy"},
            "tone": {"description": "voice", "value": "warm", "local_importance": 1}},
        "evaluation_rubric": {"evaluation_criteria": [
            {"preference": "detail", "description": "how much", "weight": 0.75,
             "levels": [{"score": 1, "description": "long"}, {"score": 5, "description": "brief"}]},
            {"preference": "tone", "description": "voice", "weight": 0.25,
             "levels": [{"score": 5, "description": "warm"}]}]},
    }
    row.update(changes)
    return row


def write(tmp_path, rows, name="scenarios.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_a_reference_file_loads_with_its_metadata_line_skipped(tmp_path):
    [scenario] = load_scenarios(write(tmp_path, [METADATA, scenario_row()]))
    assert scenario.scenario_id == "p1:a" and scenario.task == "math" and scenario.answer == "4"
    assert scenario.weights == [0.75, 0.25]
    assert scenario.hidden_profile() == (
        "\nPreferences:\n"
        "- detail: how much\n  possible values: brief; long\n  this user's value: brief\n  importance: 3 of 5\n"
        "  why: busy\n"
        "- tone: voice\n  this user's value: warm\n  importance: 1 of 5")
    assert scenario.criteria[0].grading_text() == (
        "detail. Description: how much. Levels: 1 = long; 5 = brief. Preference value: brief. Context: busy")


# A persona as `stellalisy/prefq-bench` publishes it (the reference's persona generator's fields).
REFERENCE_PERSONA = {
    "id": "persona_1", "name": "Maria Santos", "minimal_necessary_description": "A teacher turned developer",
    "demographics": {"age": 28, "occupation": "Math teacher", "location": "Phoenix, Arizona",
                     "family_context": "Single parent", "hobbies": ["rock climbing", "pottery"]},
    "educational_profile": {
        "knowledge_level": "Strong in math", "common_errors": "Overthinks",
        "cognitive_features": {"learning_style": "Visual", "attention_span": "45 minutes",
                               "problem_solving": "Methodical"},
        "affective_features": {"confidence": "Confident in math", "anxiety_triggers": "Time pressure",
                               "motivation": "Her daughter"},
        "metacognitive_features": {"reflection": "Often"}},
    "personality_big5": {"openness": {"score": 4, "description": "Curious"},
                         "conscientiousness": {"score": 5, "description": "Organized"},
                         "extraversion": {"score": 3, "description": "Moderately social"},
                         "agreeableness": {"score": 4, "description": "Supportive"}},
    "backstory": "Taught algebra for 6 years.", "domain_expertise": ["mathematics education", "pottery"],
    "preferences": {"Explanation Depth": {"value": 4, "local_importance": 5, "justification": "A teacher"}},
}


def test_a_reference_persona_reads_as_the_reference_code_profiles_it(tmp_path):
    [scenario] = load_scenarios(write(tmp_path, [METADATA, scenario_row(persona=REFERENCE_PERSONA)]))
    assert scenario.scenario_id == "p1:persona_1"
    assert scenario.hidden_profile().split("\nPreferences:\n")[0] == (
        "Persona profile:\nName: Maria Santos\nSummary: A teacher turned developer\nAge: 28\n"
        "Occupation: Math teacher\nLocation: Phoenix, Arizona\nHobbies: rock climbing, pottery\n"
        "Domain expertise: mathematics education, pottery\n"
        "\nLearning profile:\n- Knowledge level: Strong in math\n- Learning style: Visual\n"
        "- Problem solving: Methodical\n- Confidence: Confident in math\n- Anxiety triggers: Time pressure\n"
        "- Motivation: Her daughter\n"
        "\nPersonality:\n- Openness: Curious\n- Conscientiousness: Organized\n- Social style: Moderately social\n"
        "\nBackstory: Taught algebra for 6 years.\n")


@pytest.mark.parametrize(("problem", "question_part", "answer"), [
    ({"question": "Gas?", "choices": {"label": ["A", "B"], "text": ["O2", "CO2"]}, "answerKey": "B"}, "B. CO2", "B"),
    ({"context": "Sam forgot.", "question": "Next?", "answerA": "Ignore", "answerB": "Apologize", "answerC": "Blame",
      "label": "2"}, "Sam forgot.\n\nNext?\nA. Ignore", "B"),
    ({"problem": "3x = 9", "solution": "x = 3", "answer": "3"}, "3x = 9", "3"),
])
def test_each_source_shape_is_normalized(tmp_path, problem, question_part, answer):
    [scenario] = load_scenarios(write(tmp_path, [METADATA, scenario_row(original_problem=problem)]))
    assert question_part in scenario.question and scenario.answer == answer


@pytest.mark.parametrize(("row", "field"), [
    (scenario_row(problem_id=None), "problem_id"),
    (scenario_row(original_problem={"question": "no answer"}), "original_problem.answer"),
    (scenario_row(evaluation_rubric={"evaluation_criteria": [
        {"preference": "missing", "weight": 1.0, "levels": [{"score": 1, "description": "x"}]}]}),
     "evaluation_rubric.evaluation_criteria.0.preference"),
    (scenario_row(evaluation_rubric={"evaluation_criteria": [
        {"preference": "detail", "weight": 0.0, "levels": [{"score": 1, "description": "x"}]}]}),
     "evaluation_rubric.evaluation_criteria.weight"),
])
def test_a_bad_row_names_the_file_line_and_field(tmp_path, row, field):
    path = write(tmp_path, [METADATA, scenario_row(), row])
    with pytest.raises(DataError) as raised:
        load_scenarios(path)
    assert (raised.value.path, raised.value.row, raised.value.field) == (str(path), 2, field)


def test_weights_that_miss_one_load_with_a_warning_as_the_reference_keeps_them(tmp_path, caplog):
    row = scenario_row(evaluation_rubric={"evaluation_criteria": [
        {"preference": "detail", "weight": 0.5, "levels": [{"score": 1, "description": "x"}]}]})
    [scenario] = load_scenarios(write(tmp_path, [METADATA, row]))
    assert scenario.weights == [0.5] and "line 1: the weights sum to 0.500, not 1" in caplog.text


def test_an_importance_outside_one_to_five_loads_with_one_warning_as_the_reference_never_reads_it(tmp_path, caplog):
    preferences = scenario_row()["persona_preferences"]
    row = scenario_row(persona_preferences={**preferences, "tone": {**preferences["tone"], "local_importance": 9}})
    [scenario] = load_scenarios(write(tmp_path, [METADATA, row]))
    assert scenario.criteria[1].importance == 9 and scenario.weights == [0.75, 0.25]
    [warning] = [record.getMessage() for record in caplog.records if "local_importance" in record.getMessage()]
    assert "scenarios.jsonl, row 1, field persona_preferences.tone.local_importance: 9 is outside 1-5" in warning


def test_a_repeated_scenario_and_a_non_utf8_file_are_errors(tmp_path):
    with pytest.raises(DataError, match="repeats line 1"):
        load_scenarios(write(tmp_path, [METADATA, scenario_row(), scenario_row()]))
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(scenario_row(problem_id="caf\u00e9"), ensure_ascii=False).encode("latin-1") + b"\n")
    with pytest.raises(DataError, match="UTF-8") as raised:
        load_scenarios(path)
    assert raised.value.row == 0


def test_the_bundled_scenarios_load_and_are_marked_synthetic():
    scenarios = load_scenarios(SAMPLE_SCENARIOS)
    assert len(scenarios) == 24 and {s.task for s in scenarios} == {"math", "science", "social"}
    assert json.loads(SAMPLE_SCENARIOS.read_text().splitlines()[0])["synthetic"] is True
    assert all(abs(sum(s.weights) - 1) <= 0.05 and 1 <= len(s.criteria) <= 3 for s in scenarios)


def problems(ids, personas=("a", "b"), **changes):
    return [scenario_row(problem_id=problem_id, persona={"persona_id": persona}, **changes)
            for problem_id in ids for persona in personas]


def test_the_task_comes_from_the_row_else_the_metadata_line(tmp_path, caplog):
    rows = [METADATA, *problems(["q1", "q2"]), scenario_row(problem_id="q3", task="science")]
    scenarios = load_scenarios(write(tmp_path, rows))
    assert [s.task for s in scenarios] == ["math"] * 4 + ["science"]
    assert not caplog.records


def test_ids_without_a_dash_and_no_task_in_the_data_make_one_task_per_file(tmp_path, caplog):
    # The id prefix made every problem its own task of one problem: no task could give a test split.
    path = write(tmp_path, [{"type": "metadata"}, *problems(["q1", "q2", "q3", "q4"])], name="algebra.jsonl")
    scenarios = load_scenarios(path)
    assert {s.task for s in scenarios} == {"algebra"}
    assert "8 scenario(s) name no task" in caplog.text and "one task for the file, 'algebra'" in caplog.text
    test = split_scenarios(scenarios, "test", val_share=0.25, test_share=0.25, source=path)
    assert {s.problem_id for s in test} == {"q4"} and len(test) == 2


def test_ids_with_a_dash_and_no_task_in_the_data_fall_back_to_their_prefix_with_a_warning(tmp_path, caplog):
    scenarios = load_scenarios(write(tmp_path, problems(["math-1", "logic-1"])))
    assert [s.task for s in scenarios] == ["math", "math", "logic", "logic"]
    assert "their problem ids' prefixes (logic, math)" in caplog.text


def test_an_empty_split_names_the_file_and_what_it_holds(tmp_path):
    path = write(tmp_path, [METADATA, *problems(["q1", "q2"])])
    scenarios = load_scenarios(path)
    assert len(split_scenarios(scenarios, "train", val_share=0.25, test_share=0.25, source=path)) == 4
    with pytest.raises(DataError) as caught:
        split_scenarios(scenarios, "test", val_share=0.25, test_share=0.25, source=path)
    error = caught.value
    assert error.path == str(path)
    assert "no scenarios in split 'test': 4 scenario(s) in 1 task(s)" in error.message
    assert "(problems per task: math: 2)" in error.message and "--split all" in error.hint


def test_the_bundled_scenarios_split_by_problem_within_each_task():
    scenarios = load_scenarios(SAMPLE_SCENARIOS)
    splits = {name: split_scenarios(scenarios, name, val_share=0.25, test_share=0.25, source=SAMPLE_SCENARIOS)
              for name in ("train", "val", "test")}
    assert [len(part) for part in splits.values()] == [12, 6, 6]
    assert {s.problem_id for s in splits["test"]} == {"math-4", "science-4", "social-4"}


def test_tasks_that_share_problem_ids_split_apart(tmp_path):
    # q3 is math's last problem (test) and science's first (train).
    rows = [*problems(["q1", "q2", "q3"], task="math"), *problems(["q3", "q4", "q5"], personas=("c",), task="science")]
    path = write(tmp_path, rows)
    test = split_scenarios(load_scenarios(path), "test", val_share=0.34, test_share=0.34, source=path)
    assert [s.scenario_id for s in test] == ["q3:a", "q3:b", "q5:c"]
