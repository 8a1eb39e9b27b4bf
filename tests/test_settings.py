import os
from pathlib import Path

import pytest

from prefcraft.errors import ConfigError
from prefcraft.settings import (
    EMBEDDED_MODEL_NAME,
    ModelSettings,
    ServerSettings,
    Settings,
    load_settings,
)


def write_config(directory: Path, text: str) -> Path:
    path = directory / "prefcraft.toml"
    path.write_text(text)
    return path


def test_defaults_run_every_role_on_the_embedded_server():
    settings = load_settings(environ={})
    assert settings == Settings()
    assert settings.task.model == f"hosted_vllm/{EMBEDDED_MODEL_NAME}"
    assert settings.task.api_base is None
    assert settings.task.structured_output == "auto"
    assert settings.task.temperature == 0.0
    assert settings.prompt is None and settings.judge is None
    assert settings.serve is True
    assert settings.server.backend == "llamacpp"
    assert settings.server.served_name == EMBEDDED_MODEL_NAME
    assert settings.server.host == "127.0.0.1"


def test_environment_is_not_read_when_an_explicit_one_is_given(monkeypatch):
    for name in [name for name in os.environ if name.startswith("PREFCRAFT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PREFCRAFT_SEED", "7")
    assert load_settings(environ={}).seed == 0
    assert load_settings().seed == 7


def test_file_then_environment_then_overrides(tmp_path):
    config = write_config(
        tmp_path,
        """
        seed = 1
        threads = 2
        [task]
        model = "hosted_vllm/from-file"
        temperature = 0.5
        max_tokens = 100
        """,
    )
    environ = {
        "PREFCRAFT_SEED": "2",
        "PREFCRAFT_TASK__MODEL": "hosted_vllm/from-env",
        "PREFCRAFT_TASK__MAX_TOKENS": "200",
    }
    overrides = {"task": {"max_tokens": 300}}

    settings = load_settings(config, overrides=overrides, environ=environ)

    assert settings.threads == 2  # only in the file
    assert settings.seed == 2  # environment beats file
    assert settings.task.model == "hosted_vllm/from-env"
    assert settings.task.temperature == 0.5  # the file's other task keys survive the nested merge
    assert settings.task.max_tokens == 300  # overrides beat both


def test_nested_environment_keys_are_case_insensitive_and_coerced():
    environ = {
        "PREFCRAFT_TASK__MODEL": "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
        "PREFCRAFT_TASK__API_BASE": "http://127.0.0.1:8000/v1",
        "PREFCRAFT_JUDGE__MODEL": "openai/gpt-4o-mini",
        "PREFCRAFT_SERVE": "false",
        "PREFCRAFT_THREADS": "8",
        "OTHER_TASK__MODEL": "ignored",
    }
    settings = load_settings(environ=environ)
    assert settings.task.model == "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"
    assert settings.task.api_base == "http://127.0.0.1:8000/v1"
    assert settings.judge is not None and settings.judge.model == "openai/gpt-4o-mini"
    assert settings.serve is False
    assert settings.threads == 8


def test_a_nested_environment_variable_changes_one_key_of_the_files_table(tmp_path):
    config = write_config(tmp_path, '[server]\nbackend = "vllm"\nport = 8000\nmax_model_len = 2048\n')
    environ = {"PREFCRAFT_SERVER__PORT": "9000", "PREFCRAFT_SERVER__EXTRA_ARGS": '["--enforce-eager"]'}

    settings = load_settings(config, overrides={"server": {"slots": 2}}, environ=environ)

    assert settings.server.port == 9000
    assert settings.server.backend == "vllm" and settings.server.max_model_len == 2048
    assert settings.server.extra_args == ["--enforce-eager"]  # a list in one variable is JSON
    assert settings.server.slots == 2


def test_settings_built_directly_ignore_the_environment(monkeypatch):
    monkeypatch.setenv("PREFCRAFT_SEED", "7")
    assert Settings().seed == 0


def test_model_for_falls_back_to_the_task_model():
    judge = ModelSettings(model="openai/gpt-4o-mini")
    settings = Settings(judge=judge)
    assert settings.model_for("task") is settings.task
    assert settings.model_for("prompt") is settings.task
    assert settings.model_for("judge") is judge


def test_roles_needing_server():
    assert Settings().roles_needing_server() == ["task", "prompt", "judge"]
    assert Settings(serve=False).roles_needing_server() == []
    hosted_task = ModelSettings(api_base="http://127.0.0.1:8000/v1")
    assert Settings(task=hosted_task).roles_needing_server() == []  # prompt and judge inherit the task's endpoint
    assert Settings(task=hosted_task, judge=ModelSettings()).roles_needing_server() == ["judge"]
    # a hosted API's model is never served, nor pointed at the server of the others
    hosted_api = ModelSettings(model="openai/gpt-4o-mini")
    assert Settings(prompt=hosted_api).roles_needing_server() == ["task", "judge"]
    assert Settings(task=hosted_api).roles_needing_server() == []
    assert Settings(prompt=hosted_api).with_api_base("http://127.0.0.1:9000/v1").model_for("prompt") == hosted_api


def test_with_api_base_points_only_unserved_models_at_the_server():
    hosted = ModelSettings(model="openai/gpt-4o-mini", api_base="https://api.example.com/v1")
    settings = Settings(judge=hosted)

    served = settings.with_api_base("http://127.0.0.1:9000/v1")

    assert served.task.api_base == "http://127.0.0.1:9000/v1"
    assert served.model_for("prompt").api_base == "http://127.0.0.1:9000/v1"
    assert served.judge == hosted
    assert served.roles_needing_server() == []
    assert settings.task.api_base is None  # the original is left alone


@pytest.mark.parametrize(("server", "name"), [
    (ServerSettings(), EMBEDDED_MODEL_NAME),
    (ServerSettings(backend="vllm"), EMBEDDED_MODEL_NAME),
    (ServerSettings(backend="vllm", model="Qwen/Qwen2.5-7B-Instruct"), "Qwen/Qwen2.5-7B-Instruct"),
    (ServerSettings(model="/models/llama-3.1-8b.gguf"), "llama-3.1-8b"),
    (ServerSettings(backend="vllm", model="Qwen/Qwen2.5-7B-Instruct", served_model_name="qwen"), "qwen"),
])
def test_a_served_model_answers_to_its_own_name_never_to_the_bundled_models(server, name):
    assert server.served_name == name


def test_the_models_prefcraft_serves_are_named_as_what_it_serves():
    """`--server-model Qwen/...` alone: the task model is the served Qwen (not the bundled model's name, which would
    turn the small-model profile on for it in another command pointed at the server)."""
    settings = Settings(server=ServerSettings(backend="vllm", model="Qwen/Qwen2.5-7B-Instruct"))
    served = settings.with_api_base("http://127.0.0.1:9000/v1")
    assert served.task.model == "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"
    assert Settings(task=served.task, serve=False).small_model_profile() is None
    assert Settings().with_api_base("http://127.0.0.1:9000/v1").task.model == f"hosted_vllm/{EMBEDDED_MODEL_NAME}"


def test_a_model_may_ask_for_llguidance_compact_json():
    settings = load_settings(environ={"PREFCRAFT_TASK__STRUCTURED_OUTPUT": "llguidance"})
    assert settings.task.structured_output == "llguidance"


VLLM = ModelSettings(model="hosted_vllm/Qwen/Qwen2.5-7B-Instruct", api_base="http://127.0.0.1:8000/v1")


def test_the_small_model_profile_is_on_for_the_bundled_model_that_prefcraft_serves():
    settings = Settings()
    assert settings.small_model.enabled is None
    assert settings.small_model_profile() is settings.small_model
    assert settings.with_api_base("http://127.0.0.1:9000/v1").small_model_profile() is settings.small_model
    assert Settings(judge=VLLM).small_model_profile() == settings.small_model  # the task model decides


def test_the_small_model_profile_follows_the_bundled_model_onto_vllm():
    settings = Settings(server=ServerSettings(backend="vllm"))
    assert settings.small_model_profile() is settings.small_model
    assert settings.with_api_base("http://127.0.0.1:9000/v1").small_model_profile() is settings.small_model


def test_the_small_model_profile_is_on_for_the_bundled_model_served_elsewhere():
    served_apart = Settings(task=ModelSettings(api_base="http://127.0.0.1:9000/v1"), serve=False)
    assert served_apart.small_model_profile() is served_apart.small_model


@pytest.mark.parametrize(
    "settings",
    [
        Settings(task=VLLM),
        Settings(task=VLLM).with_api_base("http://127.0.0.1:9000/v1"),
        Settings(task=ModelSettings(model="openai/gpt-4o"), serve=False),
        Settings(serve=False),
        Settings(server=ServerSettings(backend="vllm", model="Qwen/Qwen2.5-7B-Instruct")),
        Settings(server=ServerSettings(model="/models/llama-3.1-8b.gguf")),
    ],
    ids=["api_base", "api_base beside a served judge", "hosted", "not served", "served by vllm", "another gguf"],
)
def test_the_small_model_profile_is_off_for_any_other_task_model(settings):
    assert settings.small_model_profile() is None


def test_an_explicit_small_model_profile_wins():
    assert Settings(small_model={"enabled": False}).small_model_profile() is None
    turned_on = Settings(task=VLLM, small_model={"enabled": True})
    assert turned_on.small_model_profile() is turned_on.small_model


def test_the_small_model_profile_from_a_file_and_the_environment(tmp_path):
    config = write_config(tmp_path, '[small_model]\nenabled = false\nfield_chars = {"AnswerProblem.response" = 300}\n')
    from_file = load_settings(config, environ={})
    assert from_file.small_model_profile() is None
    assert from_file.small_model.field_chars == {"AnswerProblem.response": 300}  # over the signatures' own bounds
    from_environment = load_settings(config, environ={"PREFCRAFT_SMALL_MODEL__ENABLED": "true"})
    assert from_environment.small_model_profile() is from_environment.small_model


@pytest.mark.parametrize(
    ("environ", "field"),
    [
        ({"PREFCRAFT_SMALL_MODEL__FIELD_CHARS": '{"response": 300}'}, "small_model.field_chars.response.[key]"),
        ({"PREFCRAFT_SMALL_MODEL__POST_CHARS": "0"}, "small_model.post_chars"),
        ({"PREFCRAFT_SMALL_MODEL__ENABLE": "true"}, "small_model.enable"),
        ({"PREFCRAFT_TASK__TEMPERATURE": "-1"}, "task.temperature"),
        ({"PREFCRAFT_TASK__MAX_TOKENS": "many"}, "task.max_tokens"),
        ({"PREFCRAFT_TASK__STRUCTURED_OUTPUT": "grammar"}, "task.structured_output"),
        ({"PREFCRAFT_SERVER__BACKEND": "tgi"}, "server.backend"),
        ({"PREFCRAFT_TASK__MODLE": "typo"}, "task.modle"),
        ({"PREFCRAFT_THREADS": "0"}, "threads"),
        ({"PREFCRAFT_SEEED": "1"}, "seeed"),
        ({"PREFCRAFT_TASK_MODEL": "one underscore"}, "task_model"),
    ],
)
def test_invalid_values_name_the_field(environ, field):
    with pytest.raises(ConfigError) as caught:
        load_settings(environ=environ)
    assert f"{field}:" in caught.value.message
    assert "PREFCRAFT_" in caught.value.hint


def test_invalid_value_in_a_file_names_the_file(tmp_path):
    config = write_config(tmp_path, "[judge]\nmax_tokens = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(config, environ={})
    assert "judge.max_tokens" in str(caught.value)
    assert str(config) in caught.value.hint


def test_a_table_in_one_variable_must_be_json():
    with pytest.raises(ConfigError, match='field "task"') as caught:
        load_settings(environ={"PREFCRAFT_TASK": "hosted_vllm/not-a-table"})
    assert "JSON" in caught.value.hint


def test_missing_config_file(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match="does not exist") as caught:
        load_settings(missing, environ={})
    assert str(missing) in str(caught.value)


def test_config_file_that_is_not_toml(tmp_path):
    config = write_config(tmp_path, "[task\nmodel = \n")
    with pytest.raises(ConfigError, match="not valid TOML") as caught:
        load_settings(config, environ={})
    assert str(config) in str(caught.value)


@pytest.mark.parametrize(("name", "small_model"), [("embedded.toml", True), ("vllm-qwen7b.toml", False)])
def test_the_shipped_experiment_settings_load(name, small_model):
    settings = load_settings(Path(__file__).parents[1] / "experiments" / name, environ={})
    assert settings.dialect("task") == {"embedded.toml": "llguidance", "vllm-qwen7b.toml": "vllm"}[name]
    assert settings.small_model.enabled is small_model


def test_auto_is_the_compact_dialect_of_the_server_prefcraft_starts_and_json_schema_elsewhere():
    assert [Settings().dialect(role) for role in ("task", "prompt", "judge")] == ["llguidance"] * 3
    served = Settings().with_api_base("http://127.0.0.1:9000/v1")
    assert served.task.structured_output == "llguidance" and served.dialect("judge") == "llguidance"
    assert Settings(server={"backend": "vllm"}).with_api_base("http://127.0.0.1:9000/v1").task.dialect == "vllm"
    elsewhere = Settings(task=ModelSettings(api_base="http://gpu:8000/v1")).with_api_base("http://127.0.0.1:9000/v1")
    assert elsewhere.dialect("task") == elsewhere.task.dialect == "json_schema"
    assert Settings(serve=False).dialect("task") == "json_schema"
    chosen = Settings(task=ModelSettings(structured_output="none")).with_api_base("http://127.0.0.1:9000/v1")
    assert chosen.task.structured_output == "none"  # a dialect set by name is kept


def test_a_compact_dialect_goes_through_the_router_too():
    routed = ModelSettings(api_bases=["http://a/v1", "http://b/v1"], structured_output="llguidance")
    assert routed.dialect == "llguidance"


def test_a_setting_under_its_former_name_is_taken_with_a_warning_for_one_release(tmp_path, caplog):
    config = write_config(tmp_path, 'num_threads = 3\nexperiment = "mine"\n')
    settings = load_settings(config, environ={"PREFCRAFT_NUM_THREADS": "6"})
    assert (settings.threads, settings.mlflow_experiment) == (6, "mine")  # the variable over the file, as before
    assert "setting num_threads is now threads" in caplog.text
    assert "setting experiment is now mlflow_experiment" in caplog.text
    assert load_settings(config, overrides={"threads": 9}, environ={}).threads == 9  # the new name wins over the old
