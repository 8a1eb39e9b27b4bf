import json
import os
import stat

import pytest

from prefcraft.files import jsonl_appender, write_jsonl_atomic, write_text_atomic


def test_rows_are_written_as_json_lines_and_replace_the_old_file(tmp_path):
    path = tmp_path / "out" / "rows.jsonl"
    write_text_atomic(path, "old\n")
    write_jsonl_atomic(path, [{"a": 1}, {"b": "é"}])
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == [{"a": 1}, {"b": "é"}]
    assert [p.name for p in path.parent.iterdir()] == ["rows.jsonl"]


def test_a_failure_while_producing_the_rows_leaves_the_previous_file_and_no_scratch(tmp_path):
    path = write_text_atomic(tmp_path / "rows.jsonl", "kept\n")

    def rows():
        yield {"a": 1}
        raise RuntimeError("died midway")

    with pytest.raises(RuntimeError):
        write_jsonl_atomic(path, rows())
    assert path.read_text() == "kept\n" and [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


def test_rows_appended_in_batches_appear_only_when_the_block_ends_and_an_error_keeps_the_old_file(tmp_path):
    path = write_text_atomic(tmp_path / "rows.jsonl", "kept\n")
    with jsonl_appender(path) as append:
        append([{"a": 1}])
        assert path.read_text() == "kept\n"
        append(iter([{"b": 2}, {"c": 3}]))
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"a": 1}, {"b": 2}, {"c": 3}]
    with pytest.raises(KeyboardInterrupt), jsonl_appender(path) as append:
        append([{"d": 4}])
        raise KeyboardInterrupt
    assert path.read_text().count("\n") == 3 and [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


def test_an_error_while_appending_removes_the_folders_made_for_the_file(tmp_path):
    with pytest.raises(RuntimeError), jsonl_appender(tmp_path / "out" / "run" / "rows.jsonl") as append:
        append([{"a": 1}])
        raise RuntimeError("the server died")
    assert list(tmp_path.iterdir()) == []


def test_a_written_file_gets_the_mode_of_any_new_file_not_the_temporary_files(tmp_path):
    previous = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "report.html", "<p>shared</p>")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
