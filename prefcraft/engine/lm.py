"""Building DSPy LMs from settings, so that one model string reaches llama.cpp, vLLM and hosted APIs alike."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import dspy
from dspy import lm15
from dspy.clients import DISK_CACHE_LIMIT
from dspy.clients.base_lm import GLOBAL_HISTORY
from dspy.clients.engines import LiteLLMEngine
from dspy.lm15 import Request, Response, Usage, response_to_events

from prefcraft.backends.process import list_models
from prefcraft.engine.adapter import LengthBounds, SchemaAdapter
from prefcraft.engine.lm_cache import ReplyCache
from prefcraft.engine.routing import NativeServerEngine, RouterEngine, ServerEngine, endpoint_router
from prefcraft.engine.small_model import field_bounds
from prefcraft.engine.usage import count_tally
from prefcraft.errors import ConfigError, PrefcraftError, ServerUnreachableError, caused_by
from prefcraft.settings import ModelSettings, Settings, SmallModelProfile

# litellm fetches its model cost map at import and retries for seconds when offline; the bundled copy is enough.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class StopCheck:
    """The stop that a signal requested (`runtime.stoppable` sets `requested`), raised before any request of any
    thread is sent (`_Sending`), so that no request leaves after Ctrl-C or SIGTERM.

    The signal's own exception reaches only the main thread, at whatever line it is on: a finalizer it interrupts or a
    library's catch-all can swallow it, and a thread pool's workers never see it. (Not a DSPy callback: any callback
    in force makes DSPy build the arguments of every module, adapter and LM call for it.)
    """

    requested: ClassVar[type[BaseException] | None] = None

    @classmethod
    def raise_if_requested(cls) -> None:
        if cls.requested is not None:
            raise cls.requested()


def build_lm(model: ModelSettings) -> dspy.LM:
    """A dspy.LM that sends temperature and a `max_tokens` every OpenAI-compatible server honours, counts every request
    it sends, and sends none once a stop was requested (`_Sending`, StopCheck).

    A model on one OpenAI-compatible endpoint of the user's own sends through DSPy's native engine
    (`NativeServerEngine`); a model on several endpoints (`api_bases`) through litellm's Router, which spreads them;
    a hosted API through litellm.
    """
    # DSPy's own retries would send a call that timed out again, to a server already too slow for it: the engine
    # retries connection errors alone.
    sampling = {"temperature": model.temperature, "max_tokens": model.max_tokens, "num_retries": 0,
                **({} if model.top_p is None else {"top_p": model.top_p})}
    api_key = _api_key(model)
    if model.api_base and model.model.split("/", 1)[0] in OPENAI_COMPATIBLE_PROVIDERS:
        native = CountingNativeEngine(model.num_retries, model.model, model.api_base, api_key, model.timeout_s)
        return RecentHistoryLM(model.model, engine=native, **sampling)
    register_unpriced(model.model)  # litellm prices each reply it returns
    if model.api_bases:
        engine = CountingRouterEngine(endpoint_router(model, api_key), retries=model.num_retries)
        return RecentHistoryLM(model.model, engine=engine, **sampling)
    client: dict[str, Any] = {"timeout": model.timeout_s}
    if model.api_base:
        client["api_base"] = model.api_base
    if api_key:
        client["api_key"] = api_key
    engine = CountingEngine(retries=model.num_retries, wire_model=model.model, **client)
    return RecentHistoryLM(model.model, engine=engine, **sampling)


# Model-string providers whose endpoint speaks OpenAI's chat API as vLLM's and llama.cpp's servers do.
OPENAI_COMPATIBLE_PROVIDERS = frozenset({"hosted_vllm", "openai", "openai_like"})


def register_unpriced(model: str) -> None:
    """Gives a model that litellm's price map lacks (a self-served one: hosted_vllm/..., openai/<local name>) a price
    of 0 per token, which is what it costs per token. litellm prices every reply it returns; for a model it has no
    price for, each reply's lookup runs its fallback rules (some 30,000 pattern matches per 300 calls, about a tenth of
    a call's client CPU: benchmarks/lm_transport.py). prefcraft reports tokens, never prices; a priced model keeps
    its price."""
    import litellm  # imported here: DSPy imports it only when a call first needs it, and so does prefcraft

    try:
        name, provider, *_ = litellm.get_llm_provider(model)
    except litellm.BadRequestError:
        return  # no provider in the model string: the first call says so
    if name not in litellm.model_cost and f"{provider}/{name}" not in litellm.model_cost:
        free = dict.fromkeys(("input_cost_per_token", "output_cost_per_token", "cache_creation_input_token_cost",
                              "cache_read_input_token_cost"), 0.0)  # all four: with fewer, litellm warns
        litellm.register_model({model: {**free, "mode": "chat", "litellm_provider": provider}})


# DSPy keeps the last 10,000 calls (prompt, request and response, tens of KB each) in its global history, each LM's and
# each calling module's: a process's memory grew with every call up to there. `inspect_history` needs only the last few.
HISTORY_ENTRIES = 100


class RecentHistoryLM(dspy.LM):
    """A dspy.LM whose call histories (DSPy's global one, its own, its calling modules') keep the last
    HISTORY_ENTRIES calls."""

    def update_history(self, entry: dict[str, Any]) -> None:
        super().update_history(entry)
        callers = dspy.settings.caller_modules or ()
        for history in (GLOBAL_HISTORY, self.history, *(module.history for module in callers)):
            del history[:-HISTORY_ENTRIES]


class _Sending:
    """Sends one request per attempt, counting each in the calling block's usage (`usage.metered`); retries a
    connection error, a rate limit (429) and a server error (5xx) `retries` times, as the openai client the reference
    codes used does (never a timeout: that server is busy, not gone; never another refusal, such as a 400 for a prompt
    over the context length, which fails the same way again); and sends a request identical
    to one still waiting for its answer only once: DSPy's thread pools resubmit calls that run long, which would give a
    slow server the same work again. Identical requests get identical answers (as from DSPy's cache)."""

    retries: int
    _waiting: ClassVar[dict[str, Future[Response]]] = {}
    _waiting_lock: ClassVar[threading.Lock] = threading.Lock()

    def _send(self, request: Request, send: Callable[[], Response]) -> Response:
        endpoint = getattr(self, "client_options", {}).get("api_base")
        if endpoint in EndpointFaults.timed_out or endpoint in EndpointFaults.unreachable:
            # The command ends with EndpointFaults.error(); this failed call only needs to say why it was not sent.
            raise PrefcraftError(f"not sent: an earlier request to {endpoint or 'this routed model'} failed")
        key = hashlib.sha256(json.dumps([endpoint, request], sort_keys=True, default=repr).encode()).hexdigest()
        with self._waiting_lock:
            earlier = self._waiting.get(key)
            if earlier is None:
                answer = self._waiting[key] = Future()
        if earlier is not None:
            count_tally("resubmissions")
            return _counted_already(earlier.result())
        try:
            result = self._send_with_retries(send, endpoint)
        except BaseException as error:
            answer.set_exception(error)
            raise
        else:
            answer.set_result(result)
            return result
        finally:
            with self._waiting_lock:
                del self._waiting[key]

    def _send_with_retries(self, send: Callable[[], Response], endpoint: str | None) -> Response:
        for attempt in range(self.retries + 1):
            StopCheck.raise_if_requested()
            count_tally("requests" if attempt == 0 else "retries")
            try:
                response = send()
            except Exception as error:
                last = attempt == self.retries or not (_connection_failed(error) or _refused_for_now(error))
                EndpointFaults.record(endpoint, error, getattr(self, "client_options", {}).get("timeout"), last)
                if last:
                    raise
                time.sleep(_wait_s(error, attempt))
            else:
                if response.finish_reason == "length":
                    count_tally("cut_short")
                return response
        raise AssertionError("unreachable")


class EndpointFaults:
    """The endpoints (None: a routed model's) where, while `runtime.model_session` watches, a request timed out (with
    the timeout) or the connection still failed after its retries: no further request goes there, and the command
    ends with `error()` instead of scoring the failed calls as 0."""

    watching: ClassVar[bool] = False
    timed_out: ClassVar[dict[str | None, float | None]] = {}
    unreachable: ClassVar[dict[str | None, str]] = {}

    @classmethod
    def record(cls, endpoint: str | None, error: Exception, timeout: float | None, last_attempt: bool) -> None:
        if cls.watching and caused_by(error, TimeoutError):
            cls.timed_out[endpoint] = timeout
        elif cls.watching and last_attempt and _connection_failed(error):
            cls.unreachable[endpoint] = f"it stopped answering mid-run ({type(error).__name__})"

    @classmethod
    def error(cls) -> PrefcraftError | None:
        if cls.unreachable:
            endpoint, detail = next(iter(cls.unreachable.items()))
            return ServerUnreachableError(endpoint or "the endpoints of a routed model", detail)
        if not cls.timed_out:
            return None
        where = ", ".join(f"{endpoint or 'the endpoints of a routed model'} (after {timeout or '?'} s)"
                          for endpoint, timeout in cls.timed_out.items())
        return ConfigError(
            f"a model call timed out at {where}: the server is slower than the timeout, and sending the same work "
            "again would slow it further",
            "raise --task-timeout-s (--judge-timeout-s, --prompt-timeout-s for those models), or lower --threads",
        )

    @classmethod
    @contextmanager
    def watch(cls) -> Iterator[None]:
        cls.timed_out.clear()
        cls.unreachable.clear()
        cls.watching = True
        try:
            yield
        finally:
            cls.watching = False
            cls.timed_out.clear()
            cls.unreachable.clear()

def _counted_already(response: Response) -> Response:
    """A copy of `response` that reports no usage, as a cache hit does: its tokens were counted with the request that
    fetched it."""
    return dataclasses.replace(response, usage=Usage())


def server_cut_off(error: BaseException | None) -> bool:
    """Whether `error`, or an error that led to it, says the server cannot serve this command at all: the call timed
    out, its connection failed, or the server refused the credentials or the model. Every later call would fail
    alike, so the command ends rather than count the item as failed (prefcraft.engine.item_failures)."""
    from dspy.utils.exceptions import (
        LMAuthError,
        LMBillingError,
        LMConfigurationError,
        LMTimeoutError,
        LMTransportError,
        LMUnsupportedModelError,
    )

    refused = (LMAuthError, LMBillingError, LMConfigurationError, LMUnsupportedModelError)
    return caused_by(error, (TimeoutError, LMTimeoutError, LMTransportError, *refused)) or _connection_failed(error)


def _connection_failed(error: BaseException | None) -> bool:
    """Whether `error`, or an error that led to it, is a connection that could not be opened or broke: worth another
    attempt, unlike a timeout. litellm reports a refused connection to a self-hosted server as a server error."""
    import httpx  # litellm's client, imported by then

    broke = (ConnectionError, lm15.TransportError, httpx.NetworkError, httpx.RemoteProtocolError)
    return caused_by(error, broke) and not caused_by(error, TimeoutError)  # lm15's read timeout is a TransportError


# The openai client's backoff: 0.5 s, doubling, at most 8 s; a server's Retry-After (at most 60 s) wins.
RETRY_FIRST_WAIT_S = 0.5
RETRY_MAX_WAIT_S = 8.0
RETRY_AFTER_MAX_S = 60.0


def _refused_for_now(error: BaseException) -> bool:
    """Whether the server answered `error` with a rate limit (429) or a server error (5xx): worth another attempt
    later, unlike any other refusal. A timeout never is, whatever status litellm gives it."""
    status = _status_code(error)
    return status is not None and (status == 429 or status >= 500) and not caused_by(error, TimeoutError)


def _status_code(error: BaseException | None) -> int | None:
    while error is not None:
        status = error.status if isinstance(error, lm15.LM15Error) else getattr(error, "status_code", None)
        if isinstance(status, int):
            return status
        error = error.__cause__ or error.__context__
    return None


def _wait_s(error: BaseException, attempt: int) -> float:
    """Seconds before attempt `attempt + 1`: the server's Retry-After when it gave one in seconds, else the backoff."""
    backoff = min(RETRY_FIRST_WAIT_S * 2**attempt, RETRY_MAX_WAIT_S)
    while error is not None:
        if isinstance(error, lm15.LM15Error) and error.retry_after is not None:  # DSPy's native engine reads it
            return min(max(error.retry_after, 0.0), RETRY_AFTER_MAX_S)
        headers = getattr(getattr(error, "response", None), "headers", None) or {}
        try:
            return min(max(float(headers["retry-after"]), 0.0), RETRY_AFTER_MAX_S)
        except (KeyError, TypeError, ValueError):  # none here, or an HTTP date: the backoff will do
            error = error.__cause__ or error.__context__
    return backoff


class CountingEngine(_Sending, ServerEngine):
    """The server engine (one HTTP request per call), sending through `_Sending`."""

    def __init__(self, retries: int, wire_model: str, **client: Any) -> None:
        super().__init__(model_type="chat", wire_model=wire_model, **client)
        self.retries = retries

    def complete(self, request: Request) -> Response:
        return self._send(request, lambda: LiteLLMEngine.complete(self, request))

    def stream(self, request: Request) -> Iterator[Any]:
        return response_to_events(self.complete(request))  # sent whole, so that it is counted like any call


class CountingNativeEngine(_Sending, NativeServerEngine):
    """DSPy's native engine for one endpoint, sending through `_Sending`."""

    def __init__(self, retries: int, model: str, api_base: str, api_key: str | None, timeout_s: float | None) -> None:
        super().__init__(model, api_base, api_key, timeout_s)
        self.retries = retries

    def complete(self, request: Request) -> Response:
        return self._send(request, lambda: NativeServerEngine.complete(self, request))


class CountingRouterEngine(_Sending, RouterEngine):
    """The Router's engine, sending through `_Sending`."""

    def __init__(self, router: Any, retries: int) -> None:
        super().__init__(router)
        self.retries = retries

    def complete(self, request: Request) -> Response:
        return self._send(request, lambda: RouterEngine.complete(self, request))


def _api_key(model: ModelSettings) -> str | None:
    """The key named by `api_key_env`; else a placeholder for a self-hosted server, which wants one but checks none."""
    if model.api_key_env:
        if model.api_key_env not in os.environ:
            raise ConfigError(f"environment variable {model.api_key_env} (api_key_env of {model.model}) is not set")
        return os.environ[model.api_key_env]
    return "EMPTY" if model.endpoints else None


def build_adapter(model: ModelSettings, profile: SmallModelProfile | None = None) -> SchemaAdapter:
    """The structured-output adapter of `model`, bounded by the small-model profile when it is on (Settings'
    `small_model_profile()`): its bounds, and per field the bounds the signatures declare under its own entries;
    without one, `max_tokens` alone bounds each reply, as in the papers."""
    if profile is None:
        return SchemaAdapter(dialect=model.dialect)
    bounds = LengthBounds(profile.string_chars, profile.list_items, *field_bounds(profile))
    return SchemaAdapter(dialect=model.dialect, bounds=bounds)


# The model list is cheap, but a server still busy with the calls that just timed out can take longer than a short call
# timeout to send it: below this, a busy server would be reported as dead.
PROBE_MIN_TIMEOUT_S = 3.0


# litellm providers that run on the user's own machines: they have no public address to fall back on.
SELF_HOSTED_PROVIDERS = frozenset({"hosted_vllm", "vllm", "openai_like", "lm_studio", "llamafile", "xinference",
                                   "litellm_proxy", "docker_model_runner"})


def check_configured(model: ModelSettings, role: str) -> None:
    """Fail before any call when `role`'s model, which no server of ours answers, has nowhere to send calls: a
    self-hosted provider without an endpoint, or a hosted one whose API key is not set."""
    if model.endpoints:
        return
    provider = model.model.split("/", 1)[0] if "/" in model.model else "openai"
    if provider in SELF_HOSTED_PROVIDERS:
        raise ConfigError(
            f"the {role} model {model.model} has no endpoint, and with --no-serve nothing serves it",
            f"give --{role}-api-base http://HOST:PORT/v1 (api_base in a config file), or drop --no-serve",
        )
    if model.api_key_env:
        return  # _api_key names it when it is unset
    import litellm

    missing = litellm.validate_environment(model.model).get("missing_keys") or []
    if missing:
        raise ConfigError(
            f"the {role} model {model.model} is a hosted model and {', '.join(missing)} is not set",
            f"set {missing[0]}, name the variable that holds the key with api_key_env, or give --{role}-api-base",
        )


def check_reachable(model: ModelSettings, role: str | None = None) -> None:
    """Fail fast, naming the endpoint (and the role's flag, when the role is known), when a server of a self-hosted
    model does not answer."""
    for api_base in model.endpoints:
        _check_endpoint(model, api_base, role)


def _check_endpoint(model: ModelSettings, api_base: str, role: str | None) -> None:
    try:
        served = list_models(api_base, timeout_s=min(max(model.timeout_s, PROBE_MIN_TIMEOUT_S), 10.0))
    except (OSError, ValueError) as error:
        raise ServerUnreachableError(api_base, f"{type(error).__name__}: {error}", role=role) from None
    served_name = model.model.split("/", 1)[1] if "/" in model.model else model.model
    if served and served_name not in served:
        raise ConfigError(
            f"{api_base} serves {', '.join(served)}, not {served_name}",
            f"use the model string {model.model.split('/', 1)[0]}/{served[0]}",
        )


def configure_cache(settings: Settings) -> Path:
    """Point DSPy's disk cache at `cache_directory(settings)` and return it."""
    directory = cache_directory(settings)
    use_disk_cache(directory)
    return directory


# DSPy keeps up to a million replies in memory, each a few KB: a process's memory grew with every call. The disk tier
# keeps every reply (a rerun or `--resume` repeats no answered call); memory holds only the recent ones.
MEMORY_CACHE_ENTRIES = 10_000


def use_disk_cache(directory: Path) -> None:
    """DSPy's on-disk cache (with its in-memory one, of MEMORY_CACHE_ENTRIES) in `directory`: for this process and
    every thread it starts.

    It is a ReplyCache, as `dspy.configure_cache` would build DSPy's own: replies cut short are never stored.
    """
    dspy.cache = ReplyCache(
        enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(directory),
        disk_size_limit_bytes=DISK_CACHE_LIMIT, memory_max_entries=MEMORY_CACHE_ENTRIES,
    )


def cache_directory(settings: Settings) -> Path:
    """The DSPy cache directory of `settings`: one per set of endpoints.

    DSPy's cache key ignores `api_base`, so the same model name on another server would return the first server's
    answers; keying the directory on every (model, set of endpoints) in use keeps them apart. A model that prefcraft
    serves itself (no endpoint in `settings`) is keyed on the server's backend and model instead of its address, whose
    port changes from run to run: a rerun on a fresh embedded server reuses the answers of the last one.
    """
    models = map(settings.model_for, ("task", "prompt", "judge"))
    endpoints = sorted({(m.model, " ".join(sorted(m.endpoints))) for m in models})
    if settings.roles_needing_server():
        endpoints.append(("served", settings.server.identity))
    digest = hashlib.sha256(repr(endpoints).encode()).hexdigest()[:12]
    return settings.cache_dir / digest
