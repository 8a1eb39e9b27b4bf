"""No cached failures: a reply cut short or unparseable is asked again on the next run once the server is healed,
while good replies stay cached. Real LM calls through build_lm against a stand-in server behind a cutting proxy."""

import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import dspy
import pytest
from cutting_proxy import CuttingProxy
from dspy.utils.exceptions import AdapterParseError
from litellm import ModelResponse
from openai_standin import StandInServer

from prefcraft.engine.lm import MEMORY_CACHE_ENTRIES, build_adapter, build_lm, use_disk_cache
from prefcraft.engine.lm_cache import SQLITE_SETTINGS, ReplyCache, finish_reasons
from prefcraft.settings import EMBEDDED_MODEL_NAME, ModelSettings, SmallModelProfile

QUESTIONS = [f"question {index}" for index in range(4)]
ANSWERED_BEFORE_THE_CUT = 2
CUT = len(QUESTIONS) - ANSWERED_BEFORE_THE_CUT
ANSWERED_THEN_CUT = ["hi"] * ANSWERED_BEFORE_THE_CUT + [None] * CUT


@pytest.fixture
def standin() -> Iterator[StandInServer]:
    server = StandInServer()
    yield server
    server.close()


def ask_all(model: ModelSettings) -> list[str | None]:
    """One run: each question once; None where the call failed or its reply did not parse."""
    predict = dspy.Predict("question -> answer")
    answers = []
    with dspy.context(lm=build_lm(model), adapter=build_adapter(model, SmallModelProfile())):
        for question in QUESTIONS:
            try:
                answers.append(predict(question=question).answer)
            except (dspy.LMError, AdapterParseError):
                answers.append(None)
    return answers


def rerun_after_a_cut(mode: str, upstream: str, cache_dir: Path, use_cache: Callable[[Path], None] = use_disk_cache,
                      **model: object):
    """Three runs in front of the model server at `upstream`: cut mid-way, then healed (same process), then a new
    process on the same disk cache. Returns the answers of each run and the requests that reached the server in each."""
    proxy = CuttingProxy(upstream, mode, cut_after=ANSWERED_BEFORE_THE_CUT)
    settings = ModelSettings(api_base=proxy.api_base, num_retries=0, **model)
    answers, requests = [], []
    try:
        use_cache(cache_dir)
        for run in ("cut", "healed", "new process"):
            if run == "healed":
                proxy.heal()
            if run == "new process":
                use_cache(cache_dir)
            before = proxy.completions
            answers.append(ask_all(settings))
            requests.append(proxy.completions - before)
    finally:
        proxy.close()
    return answers, requests


def dspys_own_cache(directory: Path) -> None:
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(directory))


@pytest.mark.parametrize("mode", ["length", "hang_up", "garbled"])
def test_a_reply_cut_short_or_unparsed_is_asked_again_once_the_server_is_healed(mode, standin, tmp_path):
    answers, requests = rerun_after_a_cut(mode, standin.api_base, tmp_path, timeout_s=10)
    assert answers == [ANSWERED_THEN_CUT, ["hi"] * len(QUESTIONS), ["hi"] * len(QUESTIONS)]
    assert requests == [len(QUESTIONS), CUT, 0]  # the good replies come from the cache, in memory and then on disk


@pytest.mark.parametrize("mode", ["length", "garbled"])
def test_dspys_own_cache_serves_the_broken_reply_again(mode, standin, tmp_path):
    """The failure the ReplyCache is for: DSPy stores a complete reply, cut short or not, like any other."""
    answers, requests = rerun_after_a_cut(mode, standin.api_base, tmp_path, dspys_own_cache, timeout_s=10)
    assert answers == [ANSWERED_THEN_CUT] * 3
    assert requests == [len(QUESTIONS), 0, 0]


@pytest.mark.server
@pytest.mark.parametrize("mode", ["length", "hang_up"])
def test_on_the_real_model_the_rerun_asks_again_only_what_was_cut(mode, embedded_server, tmp_path):
    """JSONAdapter repairs half a JSON object into an empty answer, so a reply cut short may even parse: only its
    finish reason tells it apart."""
    answers, requests = rerun_after_a_cut(mode, embedded_server.base_url, tmp_path, max_tokens=256, timeout_s=300)

    cut, healed, new_process = answers
    assert requests == [len(QUESTIONS), CUT, 0]
    assert healed[:ANSWERED_BEFORE_THE_CUT] == cut[:ANSWERED_BEFORE_THE_CUT]
    assert all(healed) and new_process == healed
    assert healed[ANSWERED_BEFORE_THE_CUT:] != cut[ANSWERED_BEFORE_THE_CUT:]


def test_a_reply_cut_short_through_the_router_is_never_cached(standin, tmp_path):
    """The Router's calls are canonical requests, which DSPy caches in its own record format."""
    proxies = [CuttingProxy(standin.api_base, "length") for _ in range(2)]
    model = ModelSettings(model=f"hosted_vllm/{EMBEDDED_MODEL_NAME}", api_bases=[p.api_base for p in proxies],
                          num_retries=0)
    use_disk_cache(tmp_path)
    try:
        assert build_lm(model)("Say hi.") == ["{"]
        for proxy in proxies:
            proxy.heal()
        assert build_lm(model)("Say hi.") == ["{}"]
        use_disk_cache(tmp_path)
        assert build_lm(model)("Say hi.") == ["{}"]
    finally:
        for proxy in proxies:
            proxy.close()
    assert len(standin.bodies) == 2


def test_the_reply_cache_keeps_dspys_disk_size_and_fewer_replies_in_memory(tmp_path):
    dspy.configure_cache(disk_cache_dir=str(tmp_path / "dspy"))
    dspys_own = dspy.cache
    use_disk_cache(tmp_path / "ours")
    assert isinstance(dspy.cache, ReplyCache)
    assert dspy.cache.disk_cache_dir == str(tmp_path / "ours")
    assert dspy.cache.disk_cache.size_limit == dspys_own.disk_cache.size_limit
    assert dspy.cache.memory_cache.maxsize == MEMORY_CACHE_ENTRIES < dspys_own.memory_cache.maxsize


def test_the_disk_tier_opens_its_connections_in_one_thread_whichever_thread_calls(tmp_path):
    use_disk_cache(tmp_path)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    opened = []
    connect = sqlite3.connect

    def counted(*args, **kwargs):
        opened.append(threading.current_thread().name)
        return connect(*args, **kwargs)

    with mock.patch("sqlite3.connect", counted), ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: dspy.cache.put({**request, "n": n}, {"choices": []}), range(32)))
        assert all(dspy.cache.disk_cache.get(dspy.cache.cache_key({**request, "n": n})) for n in range(32))
    # None per calling thread: the disk tier's own thread opened one per shard as the cache was set up
    assert len(opened) <= 16 and set(opened) <= {"prefcraft-disk-cache_0"}


def test_the_disk_tier_maps_none_of_its_database_into_memory_and_caches_few_pages(tmp_path):
    use_disk_cache(tmp_path)
    dspy.cache.put({"model": "m", "messages": []}, {"choices": []})

    def pragmas() -> set[tuple[int, int]]:
        return {(shard._sql("PRAGMA mmap_size").fetchone()[0], shard._sql("PRAGMA cache_size").fetchone()[0])
                for shard in dspy.cache.disk_cache.disk._shards}

    expected = {(SQLITE_SETTINGS["sqlite_mmap_size"], SQLITE_SETTINGS["sqlite_cache_size"])}
    assert dspy.cache.disk_cache._run(pragmas) == expected
    with ThreadPoolExecutor(1) as fresh:  # a connection opened later, in another thread, reads the same settings
        assert fresh.submit(pragmas).result() == expected


@pytest.mark.parametrize(
    ("record", "reasons"),
    [
        ({"_dspy_format": "dspy-lm15-result-v1", "responses": [{"finish_reason": "length"}]}, ["length"]),
        ({"choices": [{"finish_reason": "stop"}, {"finish_reason": "length"}]}, ["stop", "length"]),
        (ModelResponse(choices=[{"finish_reason": "length", "message": {"content": "{"}}]), ["length"]),
        ("not a reply", []),
    ],
)
def test_finish_reasons_are_read_from_either_record_shape(record, reasons):
    assert finish_reasons(record) == reasons
