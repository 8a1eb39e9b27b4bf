"""`safe_name` and `path_in`: an id read from data names one file inside its directory, and no other id's file."""

import itertools

import pytest

from prefcraft.files import MAX_NAME_CHARS, path_in, safe_name, write_text_atomic

UNSAFE = ["../../outside", "/abs/path", "..", ".", "a/b", "a\\b", "nul\0byte", "x" * 300, "", ".hidden", "a~b",
          "c123#abcd1234", "caf\u00e9", "lone \ud800 surrogate", "~root"]


@pytest.mark.parametrize("value", ["user123", "sample_user_01", "u1", "a.b-c_d", "-x", "x" * MAX_NAME_CHARS])
def test_an_id_that_is_already_a_plain_file_name_keeps_it(value):
    assert safe_name(value) == value


@pytest.mark.parametrize("value", UNSAFE)
def test_any_other_id_becomes_one_plain_file_name(value):
    name = safe_name(value)
    assert name != value and name not in {".", ".."} and not name.startswith((".", "~"))
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-~")
    assert len(name) <= MAX_NAME_CHARS
    assert safe_name(value) == name  # the same id gets the same name on every run


def test_distinct_ids_never_share_a_name():
    ids = [*UNSAFE, "a_b", "a:b", "a b", "a?b", "a/b/", "A/b", "x" * 301, "x" * 300 + "y", "user123"]
    ids += [safe_name(value) for value in UNSAFE]  # an id spelled like another id's safe name
    names = [safe_name(value) for value in ids]
    assert len(set(names)) == len(set(ids))
    for first, second in itertools.combinations(set(ids), 2):
        assert safe_name(first) != safe_name(second), (first, second)


@pytest.mark.parametrize("value", UNSAFE)
def test_a_file_named_after_any_id_is_written_inside_its_directory(tmp_path, value):
    directory = tmp_path / "work" / "out"
    path = write_text_atomic(path_in(directory, value, ".json"), "{}")
    assert path.parent == directory and path.read_text() == "{}"
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [path]
    assert not (tmp_path.parent / "outside.json").exists()


def test_a_suffix_cannot_carry_the_file_out_of_its_directory(tmp_path):
    with pytest.raises(ValueError, match="inside"):
        path_in(tmp_path, "u1", "/../../x.json")
