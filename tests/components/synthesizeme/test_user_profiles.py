import json
from pathlib import Path
from typing import Any

import datasets
import pytest

from prefcraft.components.synthesizeme.profiles import PRISM_SURVEY, load_profiles
from prefcraft.errors import DataError


def survey_row(user_id: Any, **columns: Any) -> dict[str, Any]:
    """One row as in HannahRoseKirk/prism-alignment's survey config, including columns the loader ignores."""
    return {
        "user_id": user_id,
        "self_description": "I like gardening.",
        "system_string": "Be brief.",
        "stated_prefs": {"values": 80, "creativity": 20},
        "age": "25-34 years old",
        "gender": "Female",
        "employment_status": "Working full-time",
        "education": "University Bachelors Degree",
        "marital_status": "Never been married",
        "english_proficiency": "Native speaker",
        "religion": {"self_described": "Catholic", "categorised": "Christian", "simplified": "Christian"},
        "ethnicity": {"self_described": "white", "categorised": "White", "simplified": "White"},
        "location": {"birth_country": "Mexico", "birth_region": "Americas", "reside_country": "United States"},
        "study_locale": "us",
        **columns,
    }


NO_DEMOGRAPHICS = {
    "age": None,
    "gender": "",
    "employment_status": None,
    "education": None,
    "marital_status": None,
    "religion": None,
    "ethnicity": {"self_described": None, "categorised": "", "simplified": None},
    "location": None,
}
ROWS = [
    survey_row("user0"),
    survey_row(
        "user1",
        gender=None,
        education="",
        marital_status=None,
        ethnicity=None,
        religion={"self_described": None, "categorised": "No Affiliation", "simplified": "No religion"},
        location={"birth_country": None, "birth_region": None, "reside_country": "United Kingdom"},
    ),
    survey_row("user2", **NO_DEMOGRAPHICS),
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in rows))
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    return path


WRITERS = {".jsonl": write_jsonl, ".parquet": write_parquet}


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_profiles_list_the_papers_attributes(tmp_path, suffix):
    profiles = load_profiles(WRITERS[suffix](tmp_path / f"survey{suffix}", ROWS))
    assert profiles["user0"] == (
        "Age: 25-34 years old\n"
        "Gender: Female\n"
        "Employment Status: Working full-time\n"
        "Education: University Bachelors Degree\n"
        "Marital Status: Never been married\n"
        "Birth Country: Mexico\n"
        "Living Country: United States\n"
        "Religion: self_described: Catholic; categorised: Christian; simplified: Christian\n"
        "Ethnicity: self_described: white; categorised: White; simplified: White"
    )


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_missing_values_are_left_out_and_users_without_any_are_skipped(tmp_path, suffix):
    profiles = load_profiles(WRITERS[suffix](tmp_path / f"survey{suffix}", ROWS))
    assert list(profiles) == ["user0", "user1"]
    assert profiles["user1"] == (
        "Age: 25-34 years old\n"
        "Employment Status: Working full-time\n"
        "Living Country: United Kingdom\n"
        "Religion: categorised: No Affiliation; simplified: No religion"
    )


def test_integer_user_ids_become_text(tmp_path):
    assert list(load_profiles(write_jsonl(tmp_path / "survey.jsonl", [survey_row(7)]))) == ["7"]


# Invalid data


@pytest.mark.parametrize("user_id", ["absent", None, ""])
def test_a_row_without_a_user_id_names_file_row_and_field(tmp_path, user_id):
    broken = survey_row(user_id)
    if user_id == "absent":
        del broken["user_id"]
    path = write_jsonl(tmp_path / "survey.jsonl", [survey_row("user0"), broken])
    with pytest.raises(DataError) as caught:
        load_profiles(path)
    error = caught.value
    assert (error.path, error.row, error.field) == (str(path), 1, "user_id")
    assert f"{path}, row 1, field 'user_id': missing user id" in str(error)


def test_a_repeated_user_id_names_both_rows(tmp_path):
    path = write_jsonl(tmp_path / "survey.jsonl", [survey_row("user0"), survey_row("user1"), survey_row("user0")])
    with pytest.raises(DataError, match="already has a profile in row 0") as caught:
        load_profiles(path)
    assert (caught.value.row, caught.value.field) == (2, "user_id")


def test_rows_must_be_objects(tmp_path):
    path = tmp_path / "survey.json"
    path.write_text(json.dumps([survey_row("user0"), "oops"]))
    with pytest.raises(DataError, match="expected an object, got str") as caught:
        load_profiles(path)
    assert caught.value.row == 1


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        load_profiles(tmp_path / "missing.parquet")


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_non_utf8_file_names_the_file(tmp_path, suffix):
    path = tmp_path / f"survey{suffix}"
    rows = [survey_row("user0"), survey_row("user1", self_description="MARKER")]
    text = "".join(json.dumps(item) + "\n" for item in rows) if suffix == ".jsonl" else json.dumps(rows)
    path.write_bytes(text.encode().replace(b"MARKER", "café".encode("latin-1")))
    with pytest.raises(DataError, match="not valid UTF-8") as caught:
        load_profiles(path)
    assert (caught.value.path, caught.value.row) == (str(path), 1 if suffix == ".jsonl" else None)


# The hub


def test_the_hub_survey_config_is_requested(monkeypatch):
    requested = []

    def load_dataset(*args: Any, split: str | None = None) -> datasets.Dataset:
        requested.append((args, split))
        return datasets.Dataset.from_list(ROWS)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    assert list(load_profiles(PRISM_SURVEY)) == ["user0", "user1"]
    assert requested == [((PRISM_SURVEY, "survey"), "train")]
