import json
import re
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import (
    JUDGE_INPUTS,
    PreferencePair,
    format_conversation,
    group_by_user,
    judge_examples,
    load_pairs,
    pair_id,
)


def row(user_id: Any, split: str, question: str, **extra: Any) -> dict[str, Any]:
    """One row as in MichaelR207/prism_personalized_0125, including columns the loader ignores."""
    return {
        "user_id": user_id,
        "split": split,
        "conversation_id": f"c-{question}",
        "turns": 1,
        "type": "unguided",
        "flip": False,
        "context": [{"role": "user", "content": question}],
        "chosen": {"role": "model", "content": f"good answer to {question}"},
        "rejected": {"role": "model", "content": f"bad answer to {question}"},
        "chosen_model": "gpt-4",
        "rejected_model": "llama-2-7b",
        "chosen_score": 90,
        **extra,
    }


ROWS = [
    row("user1", "train", "q1"),
    row("user2", "train", "q2"),
    row("user1", "val", "q3"),
    row("user1", "train", "q4"),
    row("user2", "test", "q5"),
    row("user1", "test", "q6"),
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in rows))
    return path


def write_json(path: Path, rows: list[Any]) -> Path:
    path.write_text(json.dumps(rows))
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    return path


WRITERS = {".jsonl": write_jsonl, ".json": write_json, ".parquet": write_parquet}


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_loads_every_format(tmp_path, suffix):
    pairs = load_pairs(WRITERS[suffix](tmp_path / f"pairs{suffix}", ROWS))
    assert [pair.conversation_id for pair in pairs] == ["c-q1", "c-q2", "c-q3", "c-q4", "c-q5", "c-q6"]
    first = pairs[0]
    assert first.user_id == "user1"
    assert first.split == "train"
    assert [(message.role, message.content) for message in first.context] == [("user", "q1")]
    assert (first.chosen.role, first.chosen.content) == ("model", "good answer to q1")
    assert first.rejected.content == "bad answer to q1"
    assert (first.turns, first.type, first.flip) == (1, "unguided", False)
    assert not hasattr(first, "chosen_model")


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_integer_user_ids_become_text(tmp_path, suffix):
    rows = [row(1234, "train", "q1", conversation_id=77)]
    [pair] = load_pairs(WRITERS[suffix](tmp_path / f"pairs{suffix}", rows))
    assert pair.user_id == "1234"
    assert pair.conversation_id == "77"


def test_multi_turn_context_keeps_its_order(tmp_path):
    context = [
        {"role": "user", "content": "hi"},
        {"role": "model", "content": "hello"},
        {"role": "user", "content": "tell me a joke"},
    ]
    [pair] = load_pairs(write_jsonl(tmp_path / "pairs.jsonl", [row("u", "train", "q", context=context, turns=2)]))
    assert format_conversation(pair.context) == "[user]: hi\n[model]: hello\n[user]: tell me a joke"


def test_optional_columns_may_be_absent(tmp_path):
    minimal = {key: row("u", "train", "q")[key] for key in ("user_id", "split", "context", "chosen", "rejected")}
    [pair] = load_pairs(write_jsonl(tmp_path / "pairs.jsonl", [minimal]))
    assert pair.conversation_id is None and pair.flip is None


def test_group_by_user_keeps_file_order_and_splits(tmp_path):
    users = group_by_user(load_pairs(write_jsonl(tmp_path / "pairs.jsonl", ROWS)))
    assert list(users) == ["user1", "user2"]
    user1 = users["user1"]
    assert [pair.conversation_id for pair in user1.train] == ["c-q1", "c-q4"]
    assert [pair.conversation_id for pair in user1.val] == ["c-q3"]
    assert [pair.conversation_id for pair in user1.test] == ["c-q6"]
    assert [pair.conversation_id for pair in user1.context_pairs] == ["c-q1", "c-q4", "c-q3"]
    assert [pair.conversation_id for pair in users["user2"].train] == ["c-q2"]
    assert users["user2"].val == []


# Invalid data


def test_missing_column_names_file_row_and_column(tmp_path):
    broken = row("user1", "train", "q3")
    del broken["rejected"]
    path = write_jsonl(tmp_path / "pairs.jsonl", [row("user1", "train", "q1"), row("user1", "train", "q2"), broken])
    with pytest.raises(DataError) as caught:
        load_pairs(path)
    error = caught.value
    assert (error.path, error.row, error.field) == (str(path), 2, "rejected")
    assert f"{path}, row 2, field 'rejected': missing column" in str(error)
    assert "user_id, split, context, chosen, rejected" in error.hint


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_empty_context_names_the_field(tmp_path, suffix):
    path = WRITERS[suffix](
        tmp_path / f"pairs{suffix}", [row("user1", "train", "q1"), row("u", "train", "q", context=[])]
    )
    with pytest.raises(DataError) as caught:
        load_pairs(path)
    assert (caught.value.row, caught.value.field) == (1, "context")
    assert "the conversation has no messages" in str(caught.value)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"chosen": {"role": "model"}}, "chosen.content"),
        ({"split": "dev"}, "split"),
        ({"context": [{"content": "no role"}]}, "context.0.role"),
        ({"user_id": None}, "user_id"),
    ],
)
def test_invalid_values_name_the_field(tmp_path, change, field):
    path = write_jsonl(tmp_path / "pairs.jsonl", [{**row("u", "train", "q"), **change}])
    with pytest.raises(DataError) as caught:
        load_pairs(path)
    assert (caught.value.row, caught.value.field) == (0, field)


def test_malformed_json_line_names_the_row(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(row("u", "train", "q1")) + "\n" + '{"user_id": "u", "split": \n')
    with pytest.raises(DataError, match="not valid JSON") as caught:
        load_pairs(path)
    assert (caught.value.path, caught.value.row) == (str(path), 1)


def test_malformed_json_file(tmp_path):
    path = tmp_path / "pairs.json"
    path.write_text('[{"user_id": ')
    with pytest.raises(DataError, match="not valid JSON") as caught:
        load_pairs(path)
    assert caught.value.path == str(path)


def test_json_file_must_hold_a_list_of_objects(tmp_path):
    with pytest.raises(DataError, match="expected a JSON list"):
        load_pairs(write_json(tmp_path / "object.json", row("u", "train", "q")))
    with pytest.raises(DataError, match="expected an object, got str") as caught:
        load_pairs(write_json(tmp_path / "strings.json", [row("u", "train", "q"), "oops"]))
    assert caught.value.row == 1


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_missing_file(tmp_path, suffix):
    missing = tmp_path / f"missing{suffix}"
    with pytest.raises(DataError, match="file not found") as caught:
        load_pairs(missing)
    assert caught.value.path == str(missing)


def test_a_repeated_pair_loads_as_a_pair_of_its_own_with_one_warning_naming_file_row_and_field(tmp_path, caplog):
    rows = [row("u", "train", "q1"), row("u", "train", "q2"), row("u", "test", "q1"), row("u", "test", "q1")]
    path = write_jsonl(tmp_path / "pairs.jsonl", rows)
    pairs = load_pairs(path)
    assert [pair.repeat for pair in pairs] == [0, 0, 1, 2]
    assert len({pair_id(pair) for pair in pairs}) == 4 and pair_id(pairs[2]) == pair_id(pairs[0]) + "~1"
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path}, row 2, field 'conversation_id': the same pair as row 0")
    assert "1 more repeated row(s)" in warnings[0]


def test_a_repeated_pair_without_conversation_ids_names_its_row(tmp_path, caplog):
    path = write_jsonl(tmp_path / "pairs.jsonl", [row("u", "train", "q1", conversation_id=None)] * 2)
    assert len(load_pairs(path)) == 2
    assert f"{path}, row 1: the same pair as row 0" in caplog.text


NOT_UTF8 = "caf\xe9".encode("latin-1")


def test_a_non_utf8_jsonl_line_names_the_row(tmp_path):
    path = tmp_path / "pairs.jsonl"
    lines = [json.dumps(row("u", "train", question)).encode() for question in ("q1", "q2")]
    path.write_bytes(lines[0] + b"\n" + lines[1].replace(b"q2", NOT_UTF8) + b"\n")
    with pytest.raises(DataError, match="not valid UTF-8") as caught:
        load_pairs(path)
    assert (caught.value.path, caught.value.row) == (str(path), 1)
    assert "UTF-8" in caught.value.hint


def test_a_non_utf8_json_file_names_the_file(tmp_path):
    path = tmp_path / "pairs.json"
    path.write_bytes(json.dumps([row("u", "train", "q1")]).encode().replace(b"q1", NOT_UTF8))
    with pytest.raises(DataError, match="not valid UTF-8") as caught:
        load_pairs(path)
    assert (caught.value.path, caught.value.row) == (str(path), None)


def write_parquet_with_bytes(path: Path, rows: list[dict[str, Any]], row_index: int, column: str, raw: bytes) -> Path:
    """Parquet whose string `column` holds `raw`, bytes arrow does not check, in row `row_index`."""
    table = pa.Table.from_pylist(rows)
    values = [value.encode() for value in table.column(column).to_pylist()]
    values[row_index] = raw
    unchecked = pa.array(values, pa.binary()).view(pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, unchecked), str(path))
    return path


def test_a_non_utf8_parquet_value_names_the_row(tmp_path):
    path = write_parquet_with_bytes(tmp_path / "pairs.parquet", ROWS, 3, "user_id", NOT_UTF8)
    with pytest.raises(DataError, match="not valid UTF-8") as caught:
        load_pairs(path)
    assert (caught.value.path, caught.value.row) == (str(path), 3)


# Pair ids


def test_pairs_of_one_conversation_get_distinct_stable_ids(tmp_path):
    first_turn = row("u", "train", "q1", conversation_id="c1")
    other_rejected = {**first_turn, "rejected": {"role": "model", "content": "another bad answer"}}
    second_turn = {**first_turn, "turns": 2, "context": [*first_turn["context"], first_turn["chosen"],
                                                          {"role": "user", "content": "and then?"}]}
    path = write_jsonl(tmp_path / "pairs.jsonl", [first_turn, other_rejected, second_turn])
    ids = [pair_id(pair) for pair in load_pairs(path)]
    assert len(set(ids)) == 3
    assert all(re.fullmatch(r"c1#[0-9a-f]{8}", item) for item in ids)
    assert ids == [pair_id(pair) for pair in load_pairs(path)]


def test_the_same_content_for_two_users_is_two_pairs(tmp_path):
    pairs = load_pairs(write_jsonl(tmp_path / "pairs.jsonl", [row("u1", "train", "q"), row("u2", "train", "q")]))
    assert pair_id(pairs[0]) != pair_id(pairs[1])


def test_the_bundled_sample_users_load_with_unique_pair_ids():
    pairs = load_pairs(SAMPLE_USERS)
    assert len(pairs) == 192
    assert len({pair_id(pair) for pair in pairs}) == 192
    assert pair_id(pairs[0]).startswith("sample_user_01_conv_00#")


# The hub


def test_hub_dataset_while_offline_explains_what_to_do(monkeypatch):
    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Couldn't reach 'MichaelR207/prism_personalized_0125' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataError) as caught:
        load_pairs("MichaelR207/prism_personalized_0125")
    error = caught.value
    assert error.path == "MichaelR207/prism_personalized_0125"
    assert "ConnectionError" in error.problem
    assert "local .jsonl/.json/.parquet file" in error.hint


def test_hub_dataset_rows_are_validated_like_files(monkeypatch):
    requested = {}

    def load_dataset(name: str, split: str | None = None) -> Any:
        requested.update(name=name, split=split)
        return datasets.DatasetDict(
            {"train": datasets.Dataset.from_list(ROWS[:2]), "test": datasets.Dataset.from_list(ROWS[4:])}
        )

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    pairs = load_pairs("MichaelR207/prism_personalized_0125")
    assert requested == {"name": "MichaelR207/prism_personalized_0125", "split": None}
    assert [pair.conversation_id for pair in pairs] == ["c-q1", "c-q2", "c-q5", "c-q6"]

    monkeypatch.setattr(datasets, "load_dataset", lambda name, split=None: datasets.Dataset.from_list(ROWS[:1]))
    assert len(load_pairs("MichaelR207/prism_personalized_0125", hub_split="train")) == 1


# Judge examples


def test_judge_examples_show_the_pair_in_both_orders():
    pair = PreferencePair.model_validate(row("user1", "train", "q1"))
    chosen_first, chosen_second = judge_examples(pair)
    assert set(chosen_first.inputs().keys()) == set(JUDGE_INPUTS)
    assert chosen_first.conversation == "[user]: q1"
    assert (chosen_first.first_completion, chosen_first.second_completion) == ("good answer to q1", "bad answer to q1")
    assert (chosen_first.preference, chosen_first.order) == ("First", "chosen_first")
    assert (chosen_second.first_completion, chosen_second.second_completion) == (
        "bad answer to q1",
        "good answer to q1",
    )
    assert (chosen_second.preference, chosen_second.order) == ("Second", "chosen_second")
    assert chosen_first.user_id == chosen_second.user_id == "user1"
    assert chosen_first.pair_id == chosen_second.pair_id == pair_id(pair)


def test_pair_id_without_a_conversation_id_is_a_stable_digest():
    pair = PreferencePair.model_validate(row("u", "train", "q", conversation_id=None))
    same = PreferencePair.model_validate(row("u", "train", "q", conversation_id=None))
    other = PreferencePair.model_validate(row("u", "train", "other", conversation_id=None))
    assert pair_id(pair) == pair_id(same)
    assert pair_id(pair) != pair_id(other)
    assert len(pair_id(pair)) == 16
