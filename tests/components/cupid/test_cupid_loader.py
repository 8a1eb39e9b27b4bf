"""The CUPID loader on files in the real export's shape, and its errors."""

import json

import pytest

from prefcraft.components.cupid.data import SAMPLE_INSTANCES, load_instances, split_by_persona
from prefcraft.errors import DataError


def real_row(persona="p1", kind="consistent", sessions=2, checklist_items=2, **extra):
    """One row as the hub export has it: nested sessions and turns, plus columns the loader must ignore."""
    return {
        "persona_id": persona, "instance_type": kind,
        "current_request": "Write a note to my manager Dana about the launch.",
        "current_context_factor": "my manager Dana",
        "current_contextual_preference": "Keep notes to Dana short and lead with the decision.",
        "current_checklist": [f"Is criterion {i} met?" for i in range(checklist_items)],
        "prior_interactions": [
            {"context_factor": "my manager Dana", "contextual_preference": "Short notes.", "session_id": i,
             "dialogue": [{"role": "user", "content": f"Help with note {i} to my manager Dana."},
                          {"role": "assistant", "content": "Here is a long draft."},
                          {"role": "user", "content": "She reads on her phone."}]}
            for i in range(sessions)
        ],
        "persona_description": "ignored", "current_session_index": 13, **extra,
    }


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_bundled_sample_has_four_or_more_personas_times_three_types_with_eight_sessions():
    instances = load_instances(SAMPLE_INSTANCES).instances
    personas = {instance.persona_id for instance in instances}
    assert len(personas) >= 4
    assert {(p, i.instance_type) for i in instances for p in [i.persona_id]} == {
        (p, kind) for p in personas for kind in ("consistent", "contrastive", "changing")}
    assert all(len(instance.prior_interactions) == 8 for instance in instances)
    assert all(len(instance.current_checklist) <= 4 for instance in instances)


def test_a_real_shaped_jsonl_json_and_parquet_file_load_alike(tmp_path):
    from datasets import Dataset

    rows = [real_row("p1"), real_row("p2", "changing", sessions=3)]
    jsonl = write_jsonl(tmp_path / "cupid.jsonl", rows)
    as_json = tmp_path / "cupid.json"
    as_json.write_text(json.dumps(rows), encoding="utf-8")
    parquet = tmp_path / "cupid.parquet"
    Dataset.from_list(rows).to_parquet(str(parquet))
    loaded = [load_instances(path).instances for path in (jsonl, as_json, parquet)]
    assert loaded[0] == loaded[1] == loaded[2]
    first, second = loaded[0]
    assert first.instance_id == "p1/consistent/0" and second.instance_id == "p2/changing/1"
    assert len(second.prior_interactions) == 3
    assert second.sessions()[0].startswith("[user]: Help with note 0")


def test_the_example_carries_only_dialogues_and_request_as_inputs():
    instance = load_instances(SAMPLE_INSTANCES).instances[0]
    example = instance.example()
    assert set(example.inputs().keys()) == {"sessions", "current_request"}
    assert example.gold_preference == instance.current_contextual_preference
    inputs = json.dumps(example.inputs().toDict())
    gold = [instance.current_contextual_preference, *instance.current_checklist,
            *(session.contextual_preference for session in instance.prior_interactions)]
    assert not [text for text in gold if text in inputs]


@pytest.mark.parametrize(("row", "field", "problem"), [
    (real_row(sessions=0), "prior_interactions", "no prior sessions"),
    ({**real_row(), "prior_interactions": [{"context_factor": "c", "contextual_preference": "p", "dialogue": []}]},
     "prior_interactions[0].dialogue", "dialogue is empty"),
    (real_row(checklist_items=5), "current_checklist", "at most 4 items"),
    ({key: value for key, value in real_row().items() if key != "current_request"}, "current_request",
     "missing column"),
    ({**real_row(), "instance_type": "surprising"}, "instance_type", "consistent"),
])
def test_a_bad_row_names_file_row_and_field(tmp_path, row, field, problem):
    path = write_jsonl(tmp_path / "bad.jsonl", [real_row(), row])
    with pytest.raises(DataError) as caught:
        load_instances(path)
    assert (caught.value.path, caught.value.row, caught.value.field) == (str(path), 1, field)
    assert problem in caught.value.problem


def test_skip_invalid_keeps_the_good_rows_and_counts_the_bad(tmp_path):
    path = write_jsonl(tmp_path / "mixed.jsonl", [real_row("p1"), real_row(sessions=0), real_row("p3"),
                                                  real_row(checklist_items=6)])
    loaded = load_instances(path, skip_invalid=True)
    assert [instance.persona_id for instance in loaded.instances] == ["p1", "p3"]
    assert [error.row for error in loaded.skipped] == [1, 3]


def test_unreadable_files_raise_even_when_skipping(tmp_path):
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(json.dumps(real_row()).replace("Dana", "Dan\u00e1").encode("latin-1") + b"\n")
    with pytest.raises(DataError, match="not valid UTF-8"):
        load_instances(latin1, skip_invalid=True)
    with pytest.raises(DataError, match="file not found"):
        load_instances(tmp_path / "missing.jsonl")
    with pytest.raises(DataError, match="no valid instances"):
        load_instances(write_jsonl(tmp_path / "all-bad.jsonl", [real_row(sessions=0)]), skip_invalid=True)


def test_hub_names_go_through_datasets_and_fail_with_a_data_error(monkeypatch):
    import datasets

    seen = {}

    def load_dataset(name, split=None):
        seen.update(name=name, split=split)
        raise ConnectionError("hub unreachable")

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    with pytest.raises(DataError, match="could not load the dataset"):
        load_instances("kixlab/CUPID")
    assert seen == {"name": "kixlab/CUPID", "split": "test"}


def test_split_by_persona_keeps_each_persona_in_one_split():
    instances = load_instances(SAMPLE_INSTANCES).instances
    split = split_by_persona(instances, val_personas=2, test_personas=2, seed=0)
    personas = [{i.persona_id for i in part} for part in (split.train, split.val, split.test)]
    assert [len(p) for p in personas] == [len({i.persona_id for i in instances}) - 4, 2, 2]
    assert not (personas[0] & personas[1] or personas[0] & personas[2] or personas[1] & personas[2])
    assert len(split.train) + len(split.val) + len(split.test) == len(instances)
    with pytest.raises(DataError, match="leave one for training"):
        split_by_persona(instances, val_personas=3, test_personas=3)


def test_a_two_persona_file_cannot_give_the_default_split_and_the_error_says_what_to_lower(tmp_path):
    path = write_jsonl(tmp_path / "two.jsonl", [real_row(p, kind) for p in ("p1", "p2")
                                                 for kind in ("consistent", "contrastive", "changing")])
    instances = load_instances(path).instances
    with pytest.raises(DataError) as caught:
        split_by_persona(instances, val_personas=2, test_personas=2, source=path)
    error = caught.value
    assert (error.path, error.field) == (str(path), "persona_id")
    assert "its 2 persona(s) cannot give 2 test and 2 validation personas" in error.message
    assert "--test-personas 1 --val-personas 0" in error.hint and "--split all" in error.hint
    split = split_by_persona(instances, val_personas=0, test_personas=1, source=path)  # what the hint says works
    assert len(split.train) == len(split.test) == 3 and not split.val


def test_bundled_file_is_what_the_seeded_generator_writes():
    from prefcraft.components.cupid import generate as generator

    rows = generator.generate(seed=0)
    assert "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows) == SAMPLE_INSTANCES.read_text("utf-8")
    # The user's feedback hints at the preference; it never states it.
    for row in rows:
        dialogue_text = json.dumps([session["dialogue"] for session in row["prior_interactions"]])
        assert row["current_contextual_preference"] not in dialogue_text
