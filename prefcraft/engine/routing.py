"""DSPy engines over litellm that write the request body self-hosted servers honour; one model on several endpoints
spread by litellm's Router."""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from dspy.clients.engines import LiteLLMEngine
from dspy.clients.engines.litellm_errors import litellm_errors
from dspy.lm15 import Request, Response, response_to_events

from prefcraft.backends.vllm import compact_structured_outputs_flags
from prefcraft.engine.adapter import asks_vllm_compact, constraint_in_server_field, has_free_whitespace
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
