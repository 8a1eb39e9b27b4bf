import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import dspy
import httpx
import jsonschema
import pytest
from dspy import lm15
from dspy.utils.exceptions import AdapterParseError

from prefcraft.engine.adapter import output_schema
from prefcraft.engine.item_failures import UNPARSEABLE, failure_kind, is_context_overflow
from prefcraft.engine.lm import build_adapter, build_lm
from prefcraft.experiments.rehearsal.instant_server import Faults, InstantServer, approximate_tokens, fill
from prefcraft.settings import ModelSettings, SmallModelProfile
from prefcraft.signatures.judge import JudgePreference

CLIENT = httpx.Client()  # one keep-alive client: a fresh one per request costs more than the server's answer
ITEM = {"type": "object", "properties": {"label": {"type": "string", "maxLength": 4}}, "required": ["label"]}
CONSTRUCTS = {
    "enum": {"enum": ["first", "second", "tie"]},
    "const": {"const": 7},
    "anyOf": {"anyOf": [{"type": "string", "minLength": 3}, {"type": "null"}]},
    "type list": {"type": ["integer", "null"], "minimum": 2},
    "integer range": {"type": "integer", "minimum": 3, "maximum": 9},
    "exclusive minimum": {"type": "integer", "exclusiveMinimum": 3, "maximum": 9},
    "negative maximum": {"type": "number", "maximum": -5},
    "stepped number": {"type": "number", "minimum": 0.05, "maximum": 1, "multipleOf": 0.1},
    "short string": {"type": "string", "maxLength": 3},
    "long string": {"type": "string", "minLength": 40},
    "bounded list": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3, "uniqueItems": True},
    "map": {"type": "object", "patternProperties": {"^[a-z0-9]{1,8}$": {"type": "boolean"}}, "minProperties": 1,
            "maxProperties": 4, "additionalProperties": False},
    "nested": {"type": "object", "properties": {"outer": {"type": "object", "properties": {
        "inner": {"type": "array", "items": ITEM, "minItems": 1, "maxItems": 2}}, "required": ["inner"]}},
               "required": ["outer"]},
    "$defs and $ref": {"$defs": {"Item": ITEM}, "type": "object",
                       "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "minItems": 1}},
                       "required": ["items"]},
}


@pytest.fixture
def server() -> Iterator[InstantServer]:
    with InstantServer() as instant:
        yield instant


def chat(server: InstantServer, constraint: dict, content: str = "hello", model: str = "task-model",
         max_tokens: int = 100) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens, **constraint}
    return CLIENT.post(f"{server.base_url}/chat/completions", json=body)


def response_format(schema: dict) -> dict:
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "outputs", "schema": schema}}}


def reply_of(response: httpx.Response) -> object:
    return json.loads(response.json()["choices"][0]["message"]["content"])


# the reply's JSON


@pytest.mark.parametrize("construct", CONSTRUCTS)
def test_filled_values_are_valid_for_each_construct_simplest_and_drawn(construct):
    schema = CONSTRUCTS[construct]
    for rng in (None, *(random.Random(seed) for seed in range(20))):
        jsonschema.validate(fill(schema, "ab12cd", rng), schema)


def test_the_simplest_fill_takes_first_options_and_lowest_values():
    assert fill(CONSTRUCTS["enum"]) == "first"
    assert fill(CONSTRUCTS["exclusive minimum"]) == 4
    assert fill(CONSTRUCTS["stepped number"]) == pytest.approx(0.1)
    assert fill(CONSTRUCTS["bounded list"], "hi") == ["hi", "hi-1"]
    assert fill(CONSTRUCTS["$defs and $ref"], "word") == {"items": [{"label": "word"}]}
    assert fill({"type": "object"}) == {}


def test_drawn_fills_vary_choices_and_sizes():
    drawn = [fill(CONSTRUCTS["enum"], rng=random.Random(seed)) for seed in range(30)]
    assert set(drawn) == {"first", "second", "tie"}
    sizes = {len(fill(CONSTRUCTS["bounded list"], rng=random.Random(seed))) for seed in range(30)}
    assert sizes == {2, 3}


@pytest.mark.parametrize("dialect", ["json_schema", "llguidance", "vllm"])
def test_each_dialect_of_an_adapter_request_is_answered_with_json_valid_for_its_schema(server, dialect):
    schema = output_schema(JudgePreference)
    constraint = {
        "json_schema": response_format(schema),
        "llguidance": {"grammar": "%llguidance {}\nstart: %json " + json.dumps(schema)},
        "vllm": {"structured_outputs": {"json": schema}},
    }[dialect]
    jsonschema.validate(reply_of(chat(server, constraint)), schema)


def test_a_request_without_a_schema_gets_an_object(server):
    assert isinstance(reply_of(chat(server, {})), dict)


def test_replies_are_deterministic_per_body_and_differ_between_bodies(server):
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    first, again = (chat(server, response_format(schema), "one").json() for _ in range(2))
    other = chat(server, response_format(schema), "two").json()
    assert first == again
    assert reply_of_body(first) != reply_of_body(other)


def reply_of_body(body: dict) -> str:
    return body["choices"][0]["message"]["content"]


def test_usage_counts_approximate_tokens_of_every_message_and_of_the_reply(server):
    messages = [{"role": "system", "content": "s" * 10}, {"role": "user", "content": [{"type": "text", "text": "é"}]}]
    body = {"model": "m", "messages": messages, "max_tokens": 50}
    answer = CLIENT.post(f"{server.base_url}/chat/completions", json=body).json()
    assert answer["usage"]["prompt_tokens"] == approximate_tokens("s" * 10 + "é") == 3  # 12 UTF-8 bytes
    assert answer["usage"]["completion_tokens"] == approximate_tokens(reply_of_body(answer))


# the faults


def model_settings(server: InstantServer, **settings: object) -> ModelSettings:
    return ModelSettings(model="hosted_vllm/task-model", api_base=server.base_url, num_retries=0, timeout_s=10,
                         **settings)


def judge(model: ModelSettings) -> dspy.Prediction:
    with dspy.context(lm=build_lm(model), adapter=build_adapter(model, SmallModelProfile())):
        return dspy.Predict(JudgePreference)(conversation="[user]: hi", first_completion="Hello!",
                                             second_completion="Hi.")


def causes(error: BaseException | None) -> Iterator[BaseException]:
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


def test_a_clean_server_answers_a_prefcraft_call():
    with InstantServer(models=["task-model"]) as server:
        assert judge(model_settings(server)).preference in output_schema(JudgePreference)["properties"]["preference"][
            "enum"]


def test_a_prompt_over_the_context_is_vllms_400_and_a_context_overflow_to_prefcraft():
    with InstantServer(Faults(context_tokens=100)) as server:
        response = chat(server, {}, content="x" * 200, max_tokens=60)  # 50 tokens of prompt
        assert response.status_code == 400
        assert response.json() == {"error": {
            "type": "BadRequestError", "param": None, "code": 400,
            "message": "This model's maximum context length is 100 tokens. However, you requested 110 tokens (50 in "
                       "the messages, 60 in the completion). Please reduce the length of the messages or completion."}}
        with pytest.raises(dspy.ContextWindowExceededError) as caught:
            judge(model_settings(server, max_tokens=100))
        assert lm15.ContextLengthError in {type(cause) for cause in causes(caught.value)}  # as from vLLM's 400
        assert is_context_overflow(caught.value)
        assert {name: stats.faults for name, stats in server.stats().items()} == {"task-model": {"context_length": 2}}


def test_a_server_error_is_an_http_500_seen_by_dspy_as_an_lm_error():
    with InstantServer(Faults(error_rate=1.0)) as server:
        assert chat(server, {}).status_code == 500
        with pytest.raises(dspy.LMError):
            judge(model_settings(server))
        assert server.stats()["task-model"].faults == {"server_error": 2}


def test_a_cut_reply_is_unparseable_to_prefcraft_and_spends_max_tokens():
    with InstantServer(Faults(cut_rate=1.0)) as server:
        answer = chat(server, response_format(CONSTRUCTS["nested"]), max_tokens=77).json()
        assert answer["choices"][0]["finish_reason"] == "length"
        assert answer["usage"]["completion_tokens"] == 77
        with pytest.raises(json.JSONDecodeError):
            json.loads(reply_of_body(answer))
        with pytest.raises(AdapterParseError) as caught:
            judge(model_settings(server))
        assert failure_kind(caught.value) == UNPARSEABLE
        assert server.stats()["task-model"].faults == {"cut": 2}


def test_fault_rates_hit_about_their_share_of_requests_and_the_seed_picks_which():
    def failed(seed: int) -> list[bool]:
        with InstantServer(Faults(error_rate=0.3, seed=seed)) as server:
            return [chat(server, {}, content=f"request {number}").status_code == 500 for number in range(100)]

    first = failed(0)
    assert 15 <= sum(first) <= 45
    assert failed(0) == first
    assert failed(1) != first


def test_replies_are_held_back_by_the_delay():
    with InstantServer(Faults(delay_s=0.2)) as server:
        started = time.monotonic()
        chat(server, {})
        assert time.monotonic() - started >= 0.2


# the listing and the counts


def test_models_are_listed_and_others_refused_and_health_answers():
    with InstantServer(models=["task-model", "judge-model"]) as server:
        listed = CLIENT.get(f"{server.base_url}/models").json()["data"]
        assert [model["id"] for model in listed] == ["task-model", "judge-model"]
        assert CLIENT.get(server.base_url.removesuffix("/v1") + "/health").status_code == 200
        assert chat(server, {}, model="other-model").status_code == 404


def test_stats_count_each_model_apart_across_threads(server):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda number: chat(server, {}, content="x" * (4 * number), model=f"m{number % 2}"), range(40)))
    stats = server.stats()
    assert {name: counts.requests for name, counts in stats.items()} == {"m0": 20, "m1": 20}
    assert stats["m1"].longest_prompt_tokens == 39
    assert stats["m0"].prompt_tokens == sum(range(0, 40, 2))
    assert stats["m0"].completion_tokens == 20 * approximate_tokens("{}")
    assert stats["m0"].faults == {}


def test_the_module_serves_from_a_process_of_its_own_until_sigterm():
    process = subprocess.Popen([sys.executable, "-m", "prefcraft.experiments.rehearsal.instant_server",
                                "--context-tokens", "10"], stdout=subprocess.PIPE, text=True)
    try:
        base_url = process.stdout.readline().strip()
        assert CLIENT.get(f"{base_url}/models").json() == {"object": "list", "data": []}
        body = {"model": "m", "messages": [{"role": "user", "content": "x" * 80}]}
        assert CLIENT.post(f"{base_url}/chat/completions", json=body).status_code == 400
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == 0
    finally:
        process.kill()


def test_a_body_that_is_no_json_is_a_400(server):
    response = CLIENT.post(f"{server.base_url}/chat/completions", content=b"{not json")
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "BadRequestError"
