import copy
import json
import socket
import time
import warnings
from collections.abc import Iterator

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError
from openai_standin import StandInServer

from prefcraft.backends import free_port
from prefcraft.engine.adapter import SchemaAdapter
from prefcraft.engine.lm import StopCheck, build_adapter, build_lm, check_reachable, configure_cache
from prefcraft.engine.routing import NativeServerEngine
from prefcraft.errors import ConfigError, ServerUnreachableError
from prefcraft.settings import EMBEDDED_MODEL_NAME, ModelSettings, Settings, SmallModelProfile
from prefcraft.signatures.judge import JudgePreference


@pytest.fixture
def recording_server() -> Iterator[StandInServer]:
    """An OpenAI-compatible endpoint that keeps the request bodies."""
    server = StandInServer()
    yield server
    server.close()


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An endpoint that accepts connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def dead_endpoint() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


# build_lm


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm", "openai_like"])
def test_a_model_on_one_server_of_its_own_is_reached_through_dspys_native_engine(provider):
    lm = build_lm(ModelSettings(model=f"{provider}/{EMBEDDED_MODEL_NAME}", api_base="http://127.0.0.1:8000/v1"))
    assert isinstance(lm.engine, NativeServerEngine)
    assert lm.engine.client_options["api_base"] == "http://127.0.0.1:8000/v1"
    assert lm.engine.wire_model == f"vllm:{EMBEDDED_MODEL_NAME}"  # lm15's preset that writes max_tokens
    assert lm.engine.config.api_keys == {"vllm": "EMPTY"}  # a self-hosted server wants a key but checks none
    assert "litellm" not in type(lm.engine).__module__


def test_a_hosted_model_and_a_routed_one_go_through_litellm():
    hosted = build_lm(ModelSettings(model="anthropic/claude-x", api_base="http://127.0.0.1:8000/v1"))
    routed = build_lm(ModelSettings(model=f"hosted_vllm/{EMBEDDED_MODEL_NAME}",
                                    api_bases=["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"]))
    assert not isinstance(hosted.engine, NativeServerEngine)
    assert not isinstance(routed.engine, NativeServerEngine)


def test_a_native_engine_is_shared_by_copies_of_its_lm():
    lm = build_lm(ModelSettings(model=f"hosted_vllm/{EMBEDDED_MODEL_NAME}", api_base="http://127.0.0.1:8000/v1"))
    assert copy.deepcopy(lm).engine is lm.engine  # its connection pool and locks cannot be copied


def test_a_self_served_model_gets_a_price_of_zero_and_a_priced_model_keeps_its_price(caplog):
    import litellm

    build_lm(ModelSettings(model="hosted_vllm/org/unpriced-test-model"))
    build_lm(ModelSettings(model="openai/gpt-4o-mini"))
    unpriced = litellm.get_model_info("hosted_vllm/org/unpriced-test-model")
    assert (unpriced["input_cost_per_token"], unpriced["output_cost_per_token"]) == (0.0, 0.0)
    assert litellm.get_model_info("openai/gpt-4o-mini")["input_cost_per_token"] > 0
    assert "openai/gpt-4o-mini" not in litellm.model_cost  # no zero price beside the real one
    assert not [record for record in caplog.records if record.levelname == "WARNING"]  # litellm's, about prices


def test_sampling_settings_are_passed_on():
    lm = build_lm(ModelSettings(temperature=0.7, max_tokens=99, timeout_s=12, num_retries=3))
    assert lm.kwargs["temperature"] == 0.7
    assert lm.kwargs["max_tokens"] == 99
    assert lm.engine.client_options["timeout"] == 12
    assert (lm.engine.retries, lm.num_retries) == (3, 0)  # the engine retries connection errors, DSPy nothing
    assert "api_base" not in lm.engine.client_options


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
def test_requests_carry_temperature_and_max_tokens(recording_server, provider):
    lm = build_lm(ModelSettings(model=f"{provider}/{EMBEDDED_MODEL_NAME}", api_base=recording_server.api_base,
                                temperature=0.3, max_tokens=77))

    assert lm("Say hello.") == ["{}"]

    [body] = recording_server.bodies
    assert body["model"] == EMBEDDED_MODEL_NAME
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 77  # llama.cpp ignores max_completion_tokens and would run away
    assert "max_completion_tokens" not in body
    assert "top_p" not in body  # unset: the server's own default


def test_no_request_leaves_once_a_stop_was_requested(recording_server, monkeypatch):
    lm = build_lm(ModelSettings(api_base=recording_server.api_base))
    lm.cache = False
    monkeypatch.setattr(StopCheck, "requested", KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        lm("Say hello once more.")
    assert recording_server.bodies == []
    assert lm.callbacks == []  # no DSPy callback: with one in force, DSPy builds every call's arguments for it


def test_a_top_p_that_is_set_reaches_the_server(recording_server):
    lm = build_lm(ModelSettings(api_base=recording_server.api_base, temperature=0.7, top_p=0.9))

    lm("Say hello.")

    [body] = recording_server.bodies
    assert (body["temperature"], body["top_p"]) == (0.7, 0.9)


@pytest.mark.parametrize("dialect", ["json_schema", "llguidance", "vllm", "none"])
def test_structured_calls_reach_the_server_as_the_adapter_asks_without_a_deprecation_warning(recording_server,
                                                                                            dialect):
    """Every call reaches prefcraft's engine as DSPy's canonical Request (DSPy 3.4 warns on the complete_legacy
    shortcut); the server gets the constraint in its own form, with the sampling and the schema's token budget."""
    model = ModelSettings(api_base=recording_server.api_base, max_tokens=77, structured_output=dialect)
    adapter = build_adapter(model, SmallModelProfile())
    with warnings.catch_warnings(), dspy.context(lm=build_lm(model), adapter=adapter):
        warnings.simplefilter("error", DeprecationWarning)
        try:
            dspy.Predict(JudgePreference)(conversation="[user]: hi", first_completion="Hello!", second_completion="Hi.")
        except AdapterParseError:
            assert dialect == "none"  # the stand-in fills the schema a request carries; without one, it answers "hi"

    [body] = recording_server.bodies
    lm_kwargs: dict = {}
    adapter._prepare_response_format(build_lm(model), lm_kwargs, JudgePreference)
    constraint = {"response_format": lm_kwargs["response_format"]} if dialect == "json_schema" else {}
    schema = lm_kwargs.get("response_format", {}).get("json_schema", {}).get("schema", {})
    if dialect == "llguidance":
        constraint = {"grammar": "%llguidance {}\nstart: %json " + json.dumps(schema)}
    if dialect == "vllm":
        plain = {key: value for key, value in schema.items() if key != "x-vllm"}
        constraint = {"structured_outputs": {"json": plain}}
    assert body == {"model": EMBEDDED_MODEL_NAME, "messages": body["messages"], "temperature": 0.0,
                    "max_tokens": lm_kwargs.get("max_tokens", 77), **constraint}


def test_api_key_is_read_from_the_named_variable(monkeypatch):
    monkeypatch.setenv("PREFCRAFT_TEST_API_KEY", "sk-test-123")
    lm = build_lm(ModelSettings(model="openai/gpt-4o-mini", api_key_env="PREFCRAFT_TEST_API_KEY"))
    assert lm.engine.client_options["api_key"] == "sk-test-123"


def test_unset_api_key_variable_is_a_config_error(monkeypatch):
    monkeypatch.delenv("PREFCRAFT_TEST_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="PREFCRAFT_TEST_API_KEY"):
        build_lm(ModelSettings(model="openai/gpt-4o-mini", api_key_env="PREFCRAFT_TEST_API_KEY"))


# check_reachable


def test_models_without_an_endpoint_are_not_checked():
    check_reachable(ModelSettings(model="openai/gpt-4o-mini"))


def test_dead_endpoint_fails_fast_naming_it():
    endpoint = dead_endpoint()
    started = time.monotonic()
    with pytest.raises(ServerUnreachableError) as caught:
        check_reachable(ModelSettings(api_base=endpoint, timeout_s=30))
    assert time.monotonic() - started < 5
    assert caught.value.endpoint == endpoint
    assert endpoint in str(caught.value)
    assert caught.value.retryable


def test_silent_endpoint_times_out_naming_it(silent_endpoint):
    started = time.monotonic()
    with pytest.raises(ServerUnreachableError) as caught:
        check_reachable(ModelSettings(api_base=silent_endpoint, timeout_s=1))
    assert time.monotonic() - started < 5
    assert caught.value.endpoint == silent_endpoint


@pytest.mark.server
def test_embedded_server_is_reachable(embedded_model):
    check_reachable(embedded_model)


@pytest.mark.server
def test_wrong_model_name_is_a_config_error(embedded_model):
    wrong = embedded_model.model_copy(update={"model": "hosted_vllm/Qwen2.5-7B-Instruct"})
    with pytest.raises(ConfigError) as caught:
        check_reachable(wrong)
    assert "Qwen2.5-7B-Instruct" in caught.value.message
    assert EMBEDDED_MODEL_NAME in caught.value.message
    assert caught.value.hint == f"use the model string hosted_vllm/{EMBEDDED_MODEL_NAME}"


# A real DSPy call that cannot be answered raises instead of hanging


def judge_once(model: ModelSettings) -> None:
    with dspy.context(lm=build_lm(model), adapter=SchemaAdapter(dialect=model.dialect)):
        dspy.Predict(JudgePreference)(conversation="[user]: hi", first_completion="Hello!", second_completion="Hi.")


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
def test_call_to_a_dead_endpoint_raises_an_lm_error(provider):
    model = ModelSettings(
        model=f"{provider}/{EMBEDDED_MODEL_NAME}", api_base=dead_endpoint(), num_retries=0, timeout_s=10
    )
    started = time.monotonic()
    with pytest.raises(dspy.LMError):
        judge_once(model)
    assert time.monotonic() - started < model.timeout_s


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
def test_call_to_a_silent_endpoint_raises_after_the_timeout(silent_endpoint, provider):
    model = ModelSettings(
        model=f"{provider}/{EMBEDDED_MODEL_NAME}", api_base=silent_endpoint, num_retries=0, timeout_s=2
    )
    started = time.monotonic()
    with pytest.raises(dspy.LMTimeoutError):
        judge_once(model)
    assert time.monotonic() - started < 4 * model.timeout_s


# configure_cache


def test_cache_directory_is_per_endpoint(tmp_path):
    def settings(api_base: str | None) -> Settings:
        return Settings(task=ModelSettings(api_base=api_base), cache_dir=tmp_path)

    first = configure_cache(settings("http://127.0.0.1:8000/v1"))
    assert dspy.cache.disk_cache_dir == str(first)
    assert first.parent == tmp_path
    second = configure_cache(settings("http://127.0.0.1:9000/v1"))
    assert dspy.cache.disk_cache_dir == str(second)
    assert first != second
    assert configure_cache(settings("http://127.0.0.1:8000/v1")) == first
    assert configure_cache(settings(None)) not in (first, second)


def test_cache_directory_depends_on_every_role(tmp_path):
    task_only = Settings(cache_dir=tmp_path)
    with_judge = Settings(cache_dir=tmp_path, judge=ModelSettings(api_base="http://127.0.0.1:9000/v1"))
    assert configure_cache(task_only) != configure_cache(with_judge)


def test_a_self_served_model_keeps_its_cache_across_server_addresses(tmp_path):
    served = Settings(cache_dir=tmp_path)
    directory = configure_cache(served)
    assert configure_cache(served.with_api_base("http://127.0.0.1:40001/v1")) != directory  # explicit address
    assert configure_cache(Settings(cache_dir=tmp_path)) == directory  # next run, new port: same cache
    other_model = Settings(cache_dir=tmp_path, server={"model": "/models/other.gguf"})
    assert configure_cache(other_model) != directory
