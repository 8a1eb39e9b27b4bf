"""DSPy engines that write the request body self-hosted servers honour: DSPy's native one for a model on one
OpenAI-compatible endpoint, litellm's for hosted APIs, and litellm's Router for one model on several endpoints."""

from __future__ import annotations

import logging
import re
import shlex
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from dspy.clients.engines import LiteLLMEngine, LM15Engine
from dspy.clients.engines.litellm_errors import litellm_errors
from dspy.clients.engines.lm15_engine import timeouts_for
from dspy.lm15 import (
    Config,
    ContextLengthError,
    InvalidRequestError,
    Request,
    Response,
    RouterConfig,
    TransportError,
    response_to_events,
)
from dspy.lm15 import TimeoutError as RequestTimedOut

from prefcraft.backends.vllm import compact_structured_outputs_flags
from prefcraft.engine.adapter import asks_vllm_compact, constraint_in_server_field, has_free_whitespace, server_field
from prefcraft.errors import caused_by
from prefcraft.settings import ModelSettings

if TYPE_CHECKING:
    import litellm

logger = logging.getLogger(__name__)


class ServerEngine(LiteLLMEngine):
    """DSPy's litellm engine, taking every call as DSPy's canonical `Request` and writing the body that llama.cpp's
    and vLLM's servers honour.

    A custom engine is DSPy's hook for its transport (`dspy.LM(model, engine=...)`): caching, retries, usage tracking
    and history stay in `dspy.LM`, above the engine, and work as for any model.
    """

    # The inherited shortcut for OpenAI-style calls would take them past `complete`; without it, every call arrives
    # there as a Request.
    complete_legacy = None

    def _arguments(self, request: Request, *, streaming: bool = False) -> dict[str, Any]:
        data = super()._arguments(request, streaming=streaming)
        # DSPy writes OpenAI's current `max_completion_tokens`, which llama.cpp and older vLLM servers ignore: a
        # runaway generation follows.
        if "max_completion_tokens" in data:
            data["max_tokens"] = data.pop("max_completion_tokens")
        data.pop("n", None)  # one choice, every server's default
        constraint_in_server_field(data)
        return data

    def _response(self, raw: Any, request: Request) -> Response:
        response = super()._response(raw, request)
        if asks_vllm_compact(request.config.response_format):
            CompactReplies.check(getattr(self, "client_options", {}).get("api_base"), response.text or "")
        return response


# What servers say of a prompt over the context: vLLM's HTTP 400 ("This model's maximum context length is ..."), the
# OpenAI code ("context_length_exceeded"), llama.cpp's ("exceeds the available context size").
OVERFLOW_MESSAGE = re.compile(r"maximum context length|context_length_exceeded|context window|exceeds the available "
                              r"context size", re.IGNORECASE)
# lm15's preset for an OpenAI-compatible server (vLLM's, llama.cpp's alike): it writes `max_tokens`, wants no key.
NATIVE_PRESET = "vllm"


class NativeServerEngine(LM15Engine):
    """DSPy's native engine (lm15) for a model on one OpenAI-compatible endpoint of the user's own: the body of
    `ServerEngine` (`max_tokens`, the constraint in the server's own field, one choice) at less than a quarter of
    litellm's client CPU per call (benchmarks/lm_transport.py). `model` is prefcraft's model string
    (`hosted_vllm/<served name>`, `openai/<served name>`); the server gets the served name."""

    def __init__(self, model: str, api_base: str, api_key: str | None, timeout_s: float | None):
        super().__init__(RouterConfig(api_keys={NATIVE_PRESET: api_key or "EMPTY"}, base_urls={NATIVE_PRESET: api_base},
                                      timeouts=timeouts_for(timeout_s)))
        self.wire_model = f"{NATIVE_PRESET}:{model.split('/', 1)[-1]}"
        self.client_options = {"api_base": api_base, "timeout": timeout_s}

    def complete(self, request: Request) -> Response:
        sent = replace(request, model=self.wire_model, config=_in_server_field(request.config))
        try:
            response = super().complete(sent)
        except TransportError as error:
            # lm15 reports its read timeout as a transport failure: as a timeout, DSPy's LMTimeoutError follows
            if caused_by(error, TimeoutError):
                raise RequestTimedOut(str(error), provider=NATIVE_PRESET) from error
            raise
        except InvalidRequestError as error:
            # lm15 knows OpenAI's code for a prompt over the context, not the servers' messages (vLLM's HTTP 400):
            # DSPy's ContextWindowExceededError follows, as from litellm.
            if not isinstance(error, ContextLengthError) and OVERFLOW_MESSAGE.search(str(error)):
                raise ContextLengthError(str(error), provider=NATIVE_PRESET, status=error.status) from error
            raise
        if asks_vllm_compact(request.config.response_format):
            CompactReplies.check(self.client_options["api_base"], response.text or "")
        return response

    def stream(self, request: Request) -> Iterator[Any]:
        return response_to_events(self.complete(request))

    def __deepcopy__(self, memo: dict[int, Any]) -> NativeServerEngine:
        # A transport, thread-safe and shared by every copy of its LM (as litellm's client is); its pool and locks
        # cannot be copied.
        return self


def _in_server_field(config: Config) -> Config:
    """`config` with a constraint marked for a server's own field moved there (lm15 sends `extensions` as they are)."""
    field = server_field((config.response_format or {}).get("schema", {}))
    if field is None:
        return config
    return replace(config, response_format=None, extensions={**(config.extensions or {}), **field})


class CompactReplies:
    """Whether a vLLM server honours the compact `vllm` dialect: a server started without the guidance backend ignores
    the layout it asks for, and the model may then write free whitespace, which costs tokens and lets a greedy model
    loop on it. The first such reply of an endpoint is said once, with the flag that fixes it."""

    warned: ClassVar[set[str | None]] = set()
    _lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def check(cls, endpoint: str | None, reply: str) -> None:
        if endpoint in cls.warned or not has_free_whitespace(reply):
            return
        with cls._lock:
            if endpoint in cls.warned:
                return
            cls.warned.add(endpoint)
            logger.warning(
                "the vLLM server at %s ignores the compact JSON that the vllm structured-output dialect asks for (its "
                "replies carry free whitespace, which costs tokens): start it with %s (prefcraft does when it starts "
                "vLLM), or use the json_schema dialect", endpoint or "this routed model",
                shlex.join(compact_structured_outputs_flags()),
            )


def endpoint_router(model: ModelSettings, api_key: str | None) -> litellm.Router:
    """A litellm Router with one deployment of `model` per endpoint, all under the model's own name."""
    import litellm  # imported when first needed, as DSPy does: it takes seconds

    deployments = [
        {"model_name": model.model,
         "litellm_params": {"model": model.model, "api_base": api_base, "api_key": api_key, "timeout": model.timeout_s}}
        for api_base in model.endpoints
    ]
    return litellm.Router(model_list=deployments, routing_strategy=model.routing_strategy)


class RouterEngine(ServerEngine):
    """The server engine, sending each call through a litellm Router instead of `litellm.completion`."""

    def __init__(self, router: litellm.Router):
        super().__init__(model_type="chat")
        self.router = router

    def complete(self, request: Request) -> Response:
        with litellm_errors(model=request.model):
            raw = self.router.completion(**self._arguments(request))
        return self._response(raw, request)

    def stream(self, request: Request) -> Iterator[Any]:
        return response_to_events(self.complete(request))
