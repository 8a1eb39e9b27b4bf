import re

import pytest

from prefcraft.errors import (
    CompiledProgramError,
    ConfigError,
    DataError,
    PrefcraftError,
    ServerError,
    ServerStartError,
    ServerUnreachableError,
)
from prefcraft.flags import step_parser
from prefcraft.registry import COMPONENTS


def test_data_error_names_file_row_and_field():
    error = DataError("data/prism.jsonl", 12, "chosen.content", "Field required", "fix the row")
    assert str(error).splitlines()[0] == "data/prism.jsonl, row 12, field 'chosen.content': Field required"
    assert (error.path, error.row, error.field, error.problem) == (
        "data/prism.jsonl",
        12,
        "chosen.content",
        "Field required",
    )
    assert isinstance(error, PrefcraftError)
    assert not error.retryable


def test_data_error_row_zero_is_named():
    assert "row 0" in str(DataError("a.json", 0, None, "bad"))


def test_data_error_leaves_out_what_it_does_not_know():
    assert str(DataError("a.json", None, None, "file not found")) == "a.json: file not found"
    assert str(DataError("a.json", None, "context", "empty")) == "a.json, field 'context': empty"


def test_hint_is_shown_on_its_own_line():
    error = ConfigError("server.model is required", "pass --server-model <hf-model-id>")
    assert str(error) == "server.model is required\n  hint: pass --server-model <hf-model-id>"
    assert error.message == "server.model is required"
    assert error.hint == "pass --server-model <hf-model-id>"


def test_no_hint_no_hint_line():
    error = CompiledProgramError("compiled/judge.json is missing")
    assert error.hint is None
    assert str(error) == "compiled/judge.json is missing"


def test_server_unreachable_names_the_endpoint_and_is_retryable():
    error = ServerUnreachableError("http://127.0.0.1:8000/v1", "ConnectionRefusedError: [Errno 111]")
    assert error.endpoint == "http://127.0.0.1:8000/v1"
    assert "http://127.0.0.1:8000/v1" in str(error)
    assert "ConnectionRefusedError" in str(error)
    assert "prefcraft serve" in error.hint
    assert error.retryable
    assert isinstance(error, ServerError)


def test_server_unreachable_names_flags_that_exist():
    flags = {action.option_strings[0] for action in step_parser(COMPONENTS["synthesizeme"], "evaluate")._actions}
    named = re.findall(r"--[a-z-]+", ServerUnreachableError("http://x/v1", "refused").hint)
    assert named and set(named) <= flags
    error = ServerUnreachableError("http://x/v1", "refused", role="judge")
    assert "(it serves the judge model)" in str(error) and re.findall(r"--[a-z-]+", error.hint) == ["--judge-api-base"]


def test_server_unreachable_custom_hint():
    error = ServerUnreachableError("http://x/v1", "timed out", hint="is the VPN up?")
    assert error.hint == "is the VPN up?"


def test_server_start_failure_is_not_retryable():
    error = ServerStartError("server exited with code 1")
    assert isinstance(error, ServerError)
    assert not error.retryable


def test_errors_can_be_caught_as_one_family():
    with pytest.raises(PrefcraftError):
        raise DataError("a.json", 1, "split", "bad")


def test_an_unreachable_role_names_its_own_flag(monkeypatch):
    from prefcraft.engine.lm import check_reachable
    from prefcraft.settings import ModelSettings

    judge = ModelSettings(model="hosted_vllm/judge", api_base="http://127.0.0.1:1/v1")
    with pytest.raises(ServerUnreachableError) as raised:
        check_reachable(judge, "judge")
    assert "model server at http://127.0.0.1:1/v1 is unreachable (it serves the judge model)" in str(raised.value)
    assert "--judge-api-base" in raised.value.hint and "--task-api-base" not in raised.value.hint
