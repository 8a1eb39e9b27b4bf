"""One model on several endpoints: settings, calls spread by litellm's Router, reachability and the cache key."""

import hashlib
import logging
import random
import warnings
from collections.abc import Callable, Iterator

import dspy
import pytest
from dspy.lm15 import Message, Request
from openai_standin import StandInServer

from prefcraft.backends import ManagedServer, free_port, managed_server
from prefcraft.backends.counters import read_prompt_cache
from prefcraft.commands.main import make_parser
from prefcraft.engine.lm import build_adapter, build_lm, check_reachable, configure_cache
from prefcraft.engine.routing import CompactReplies
from prefcraft.engine.session import check_servers, lm_context, model_session
from prefcraft.errors import ConfigError, ServerUnreachableError
from prefcraft.flags import settings_overrides
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.settings import (
    EMBEDDED_MODEL_NAME,
    ModelSettings,
    ServerSettings,
    Settings,
    SmallModelProfile,
    load_settings,
)

MODEL = f"hosted_vllm/{EMBEDDED_MODEL_NAME}"


@pytest.fixture
def endpoints() -> Iterator[Callable[[int], list[StandInServer]]]:
    started: list[StandInServer] = []

    def start(count: int) -> list[StandInServer]:
        started.extend(StandInServer() for _ in range(count))
        return started[-count:]

    yield start
    for endpoint in started:
        endpoint.close()


def dead_endpoint() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


# settings


def test_several_endpoints_come_from_a_toml_list_or_a_json_variable(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[task]\napi_bases = ["http://a:8000/v1", "http://b:8000/v1"]\nrouting_strategy = "least-busy"\n')
    from_file = load_settings(config, environ={})
    from_env = load_settings(environ={"PREFCRAFT_JUDGE__API_BASES": '["http://a:8000/v1", "http://b:8000/v1"]'})

    assert from_file.task.endpoints == ["http://a:8000/v1", "http://b:8000/v1"]
    assert from_file.task.routing_strategy == "least-busy"
    assert from_env.model_for("judge").endpoints == ["http://a:8000/v1", "http://b:8000/v1"]


def test_the_api_bases_flag_takes_several_endpoints():
    args = make_parser().parse_args(["synthesizeme", "fit", "--task-api-bases", "http://a:8000/v1", "http://b:8000/v1"])
    settings = load_settings(overrides=settings_overrides(args), environ={})
    assert settings.task.api_bases == ["http://a:8000/v1", "http://b:8000/v1"]


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"PREFCRAFT_TASK__API_BASE": "http://a:8000/v1", "PREFCRAFT_TASK__API_BASES": '["http://b/v1", "http://c/v1"]'},
         "give api_base (one endpoint) or api_bases (several), not both"),
        ({"PREFCRAFT_TASK__API_BASES": '["http://a:8000/v1"]'}, "api_bases needs two or more endpoints"),
        ({"PREFCRAFT_TASK__API_BASES": '["http://a/v1", "http://b/v1", "http://a/v1"]'},
         "api_bases lists http://a/v1 more than once"),
        ({"PREFCRAFT_TASK__ROUTING_STRATEGY": "round-robin"},
         "task.routing_strategy: Input should be 'simple-shuffle'"),
    ],
)
def test_invalid_endpoint_sets_are_refused_with_the_reason(environ, message):
    with pytest.raises(ConfigError, match="invalid settings") as error:
        load_settings(environ=environ)
    assert message in str(error.value)


def test_a_model_on_several_endpoints_needs_no_server_and_is_recorded_with_all_of_them():
    settings = Settings(task=ModelSettings(api_bases=["http://a/v1", "http://b/v1"]))
    assert settings.roles_needing_server() == []
    assert settings.endpoint("judge") == "http://a/v1, http://b/v1"


# calls


def test_calls_are_spread_over_every_endpoint_with_constrained_decoding_usage_and_cache(endpoints):
    random.seed(0)  # litellm's simple-shuffle draws from `random`
    first, second = endpoints(2)
    model = ModelSettings(model=MODEL, api_bases=[first.api_base, second.api_base], max_tokens=77)
    predict = dspy.Predict("question -> answer")
    questions = [dspy.Example(question=f"question {index}").with_inputs("question") for index in range(20)]

    with dspy.context(lm=build_lm(model), adapter=build_adapter(model, SmallModelProfile())):
        answers = predict.batch(questions, num_threads=4)
        with dspy.track_usage() as usage:  # DSPy tracks the calling thread's calls, not batch()'s
            assert predict(question="one more").answer == "hi"
            assert predict(question="question 0").answer == "hi"  # from DSPy's cache: no request, no usage

    assert [answer.answer for answer in answers] == ["hi"] * 20
    assert len(first.bodies) + len(second.bodies) == 21
    assert len(first.bodies) >= 5 and len(second.bodies) >= 5
    for body in first.bodies + second.bodies:
        assert body["model"] == EMBEDDED_MODEL_NAME
        assert body["max_tokens"] >= 77
        assert body["response_format"]["type"] == "json_schema"  # SchemaAdapter's constraint reached the server
    assert usage.get_total_tokens()[MODEL]["total_tokens"] == 5


@pytest.mark.parametrize("strategy", ["least-busy", "latency-based-routing"])
def test_every_routing_strategy_answers(endpoints, strategy):
    first, second = endpoints(2)
    lm = build_lm(ModelSettings(model=MODEL, api_bases=[first.api_base, second.api_base], routing_strategy=strategy))
    assert lm("Say hi.", cache=False) == ["{}"]


def test_an_explicit_request_goes_through_the_router_too(endpoints):
    servers = endpoints(2)
    lm = build_lm(ModelSettings(model=MODEL, api_bases=[server.api_base for server in servers]))
    response = lm(Request(model=MODEL, messages=(Message.user("Say hi."),)), cache=False)
    assert response.text == "{}"
    assert sum(len(server.bodies) for server in servers) == 1


def test_calls_reach_the_router_as_requests_without_a_deprecation_warning(endpoints):
    servers = endpoints(2)
    lm = build_lm(ModelSettings(model=MODEL, api_bases=[server.api_base for server in servers], max_tokens=77))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # DSPy 3.4 warns on the complete_legacy shortcut
        assert lm("Say hi.", cache=False) == ["{}"]
    [body] = [body for server in servers for body in server.bodies]
    assert body["max_tokens"] == 77  # llama.cpp ignores max_completion_tokens and would run away
    assert "max_completion_tokens" not in body


def test_a_dead_endpoint_among_several_is_named(endpoints):
    [live] = endpoints(1)
    dead = dead_endpoint()
    model = ModelSettings(model=MODEL, api_bases=[live.api_base, dead])

    with pytest.raises(ServerUnreachableError, match=f"model server at {dead} is unreachable"):
        check_reachable(model)
    with pytest.raises(ServerUnreachableError) as error:
        check_servers(Settings(task=model, serve=False))
    assert error.value.endpoint == dead


def test_the_cache_directory_is_keyed_on_the_whole_endpoint_set(tmp_path):
    def cache_dir(model: ModelSettings):
        return configure_cache(Settings(task=model, serve=False, cache_dir=tmp_path))

    pair = cache_dir(ModelSettings(model=MODEL, api_bases=["http://a/v1", "http://b/v1"]))
    assert cache_dir(ModelSettings(model=MODEL, api_bases=["http://b/v1", "http://a/v1"])) == pair
    assert cache_dir(ModelSettings(model=MODEL, api_bases=["http://a/v1", "http://c/v1"])) != pair
    assert cache_dir(ModelSettings(model=MODEL, api_bases=["http://a/v1", "http://b/v1", "http://c/v1"])) != pair
    single = cache_dir(ModelSettings(model=MODEL, api_base="http://a/v1"))
    assert single != pair
    # A single endpoint keeps the directory it had before several were possible: its cached answers stay valid.
    assert single.name == hashlib.sha256(repr([(MODEL, "http://a/v1")]).encode()).hexdigest()[:12]


# two real servers


@pytest.fixture(scope="module")
def two_embedded_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ManagedServer, ManagedServer]]:
    settings = ServerSettings(log_dir=tmp_path_factory.mktemp("server-logs"), n_threads=1, slots=2)
    with managed_server(settings) as first, managed_server(settings) as second:
        yield first, second


@pytest.mark.server
def test_pairs_are_judged_through_two_real_servers(two_embedded_servers, tmp_path):
    random.seed(0)
    servers = two_embedded_servers
    model = ModelSettings(api_bases=[server.base_url for server in servers], max_tokens=256, timeout_s=300)
    settings = Settings(task=model, serve=False, cache_dir=tmp_path)
    pairs = [dspy.Example(conversation=f"[user]: How do I {topic}?", first_completion=f"To {topic}, start today.",
                          second_completion=f"To {topic}, first learn the basics, then practise every day.")
             .with_inputs("conversation", "first_completion", "second_completion")
             for topic in ("boil an egg", "save money", "sleep better", "learn Spanish", "cook rice", "start running")]
    before = [read_prompt_cache(server.base_url) for server in servers]

    with model_session(settings) as session, lm_context(session, "task"):
        judgments = PreferenceJudge().batch(pairs, num_threads=4)

    assert [judgment.preference in ("First", "Second") for judgment in judgments] == [True] * len(pairs)
    for server, counters in zip(servers, before, strict=True):
        answered = read_prompt_cache(server.base_url) - counters
        assert answered.evaluated + answered.cached > 0, f"{server.base_url} judged nothing"


@pytest.mark.parametrize(("indent", "warned"), [(None, False), (2, True)], ids=["compact", "pretty-printed"])
def test_a_vllm_that_ignores_compact_json_is_named_once_with_the_flag_to_add(indent, warned, caplog, monkeypatch):
    monkeypatch.setattr(CompactReplies, "warned", set())
    server = StandInServer(indent=indent, numbered=True)
    model = ModelSettings(api_base=server.api_base, structured_output="vllm")
    try:
        with caplog.at_level(logging.WARNING), dspy.context(lm=build_lm(model), adapter=build_adapter(model)):
            for question in ("one", "two", "three"):
                dspy.Predict("question -> answer")(question=question)
    finally:
        server.close()
    said = [record.getMessage() for record in caplog.records if "ignores the compact JSON" in record.getMessage()]
    assert len(said) == (1 if warned else 0)
    if warned:
        assert server.api_base in said[0]
        assert """--structured-outputs-config '{"backend": "guidance", "disable_any_whitespace": true}'""" in said[0]


def test_a_json_schema_reply_is_not_checked_for_compactness(monkeypatch):
    monkeypatch.setattr(CompactReplies, "warned", set())
    server = StandInServer(indent=2)
    model = ModelSettings(api_base=server.api_base, structured_output="json_schema")
    try:
        with dspy.context(lm=build_lm(model), adapter=build_adapter(model)):
            dspy.Predict("question -> answer")(question="one")
    finally:
        server.close()
    assert CompactReplies.warned == set()
