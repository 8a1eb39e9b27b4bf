"""The LaMP-QA loader on the dataset's real shape: hub layout folders, single files, extra columns, bad rows."""

import json

import pytest

from prefcraft.components.lampqa import data as lampqa
from prefcraft.components.lampqa.data import CONFIGS, SAMPLE_QUESTIONS, load_file, load_questions
from prefcraft.errors import DataError


def row(index=0, **changes):
    base = {
        "id": f"q{index}", "question": "How should I start running?", "narrative": "I have a bad knee.",
        "rubric_aspects": [{"aspect": "Knee-safe", "reason": "bad knee", "evidence": "I have a bad knee."}],
        "profile": [{"id": 1, "text": "Which shoes for a bad knee?", "category": "Health", "date": "2020"}],
        "extra_column": {"ignored": True},
    }
    return {**base, **changes}


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_bundled_sample_has_the_hub_layout_and_a_rich_rubric():
    test = load_questions(SAMPLE_QUESTIONS, "test")
    assert {q.category for q in test.questions} == set(CONFIGS) and len(test.questions) == 12
    for question in test.questions:
        assert len(question.profile) >= 10 and 3 <= len(question.rubric_aspects) <= 6
    assert len(load_questions(SAMPLE_QUESTIONS, "train", CONFIGS[:1]).questions) == 8


def test_a_local_file_is_one_split_of_the_category_its_folder_names(tmp_path):
    folder = tmp_path / "Society_and_Culture"
    folder.mkdir()
    loaded = load_questions(write(folder / "test.jsonl", [row(0), row(1)]), "test")
    assert [q.category for q in loaded.questions] == ["Society_and_Culture"] * 2
    question = loaded.questions[0]
    assert question.profile[0].id == "1" and question.rubric_aspects[0].aspect == "Knee-safe"
    example = question.example()
    assert set(example.inputs().keys()) == {"question", "profile"}
    assert example.narrative == "I have a bad knee."
    assert load_file(write(tmp_path / "mine.jsonl", [row()]), "mine").questions[0].category == "mine"


def test_posts_without_text_are_skipped_and_counted(tmp_path):
    profile = [{"id": "a", "text": "  "}, {"id": "b", "text": "A real post"}]
    loaded = load_file(write(tmp_path / "x.jsonl", [row(profile=profile)]), "x")
    assert loaded.skipped_posts == 1 and [p.id for p in loaded.questions[0].profile] == ["b"]


def test_an_empty_profile_is_answered_without_posts_as_the_reference_answers_it(tmp_path):
    rows = [row(0), row(1, profile=[]), row(2, profile=[{"id": "a", "text": ""}])]
    loaded = load_file(write(tmp_path / "x.jsonl", rows), "x")
    assert [len(q.profile) for q in loaded.questions] == [1, 0, 0]
    assert (loaded.empty_profiles, loaded.skipped_posts) == (2, 1)


@pytest.mark.parametrize(("changes", "field", "problem"), [
    ({"profile": None}, "profile", "tuple"),
    ({"rubric_aspects": []}, "rubric_aspects", "at least 1"),
    ({"question": None}, "question", "string"),
    ({"profile": [{"id": "a"}]}, "profile.0.text", "required"),
])
def test_bad_rows_name_the_file_row_and_field(tmp_path, changes, field, problem):
    path = write(tmp_path / "bad.jsonl", [row(0), row(1, **changes)])
    with pytest.raises(DataError, match=problem) as error:
        load_file(path, "x")
    assert (error.value.path, error.value.row, error.value.field) == (str(path), 1, field)


def test_repeated_ids_and_non_utf8_files_are_data_errors(tmp_path):
    with pytest.raises(DataError, match="same id as row 0"):
        load_file(write(tmp_path / "dup.jsonl", [row(0), row(0)]), "x")
    path = tmp_path / "latin.jsonl"
    path.write_bytes(json.dumps(row()).replace("knee", "kn\\u00e9e").encode().replace(b"\\u00e9", b"\xe9") + b"\n")
    with pytest.raises(DataError, match="not valid UTF-8"):
        load_file(path, "x")


def test_a_folder_without_the_split_and_an_unknown_split_are_errors(tmp_path):
    with pytest.raises(DataError, match="no test file"):
        load_questions(tmp_path, "test")
    with pytest.raises(DataError, match="unknown split"):
        load_questions(tmp_path, "dev")


def test_a_hub_name_loads_each_config_and_split(monkeypatch):
    asked = []

    def read_rows(source, hub_config=None, hub_split=None):
        asked.append((source, hub_config, hub_split))
        return [row(len(asked))]

    monkeypatch.setattr(lampqa, "read_rows", read_rows)
    loaded = load_questions("alireza7/LaMP-QA", "validation")
    assert asked == [("alireza7/LaMP-QA", config, "validation") for config in CONFIGS]
    assert [q.category for q in loaded.questions] == list(CONFIGS)
