"""One model on several endpoints: a DSPy engine that spreads the model's calls over them with litellm's Router."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import dspy
from dspy.clients.call_result import CallResult
from dspy.clients.engines import LiteLLMEngine
from dspy.clients.engines.litellm_errors import litellm_errors
from dspy.lm15 import Request, Response, response_to_events

from prefcraft.settings import ModelSettings

if TYPE_CHECKING:
    import litellm

NO_LITELLM_CACHE = {"no-cache": True, "no-store": True}  # DSPy caches above the engine, as for its own litellm calls


def endpoint_router(model: ModelSettings, api_key: str | None) -> litellm.Router:
    """A litellm Router with one deployment of `model` per endpoint, all under the model's own name."""
    import litellm  # imported when first needed, as DSPy does: it takes seconds

    deployments = [
        {"model_name": model.model,
         "litellm_params": {"model": model.model, "api_base": api_base, "api_key": api_key, "timeout": model.timeout_s}}
        for api_base in model.endpoints
    ]
    return litellm.Router(model_list=deployments, routing_strategy=model.routing_strategy)


class RouterEngine(LiteLLMEngine):
    """DSPy's litellm engine, sending each call through a litellm Router instead of `litellm.completion`.

    A custom engine is DSPy's hook for its transport (`dspy.LM(model, engine=...)`): caching, retries, usage tracking
    and history stay in `dspy.LM`, above the engine, and work as for any model. Adapters' calls arrive through
    `complete_legacy`, DSPy 3.4's path for OpenAI-style requests (it warns that 3.5 removes it), because a canonical
    `Request` cannot carry the `extra_body` in which SchemaAdapter asks for constrained decoding.
    """

    def __init__(self, router: litellm.Router):
        super().__init__(model_type="chat")
        self.router = router

    def complete_legacy(self, lm: dspy.LM, request: dict[str, Any], **context: Any) -> CallResult:
        request = {**request, "num_retries": 0, "cache": NO_LITELLM_CACHE}
        request.pop("rollout_id", None)  # a cache-key field of DSPy's, never sent
        with litellm_errors(model=lm.model):
            raw = self.router.completion(**request)
        lm._check_truncation(raw)
        return CallResult.legacy(lm, raw, kwargs=request)

    def complete(self, request: Request) -> Response:
        data = self._arguments(request)
        with litellm_errors(model=request.model):
            raw = self.router.completion(**data)
        return self._response(raw, request)

    def stream(self, request: Request) -> Iterator[Any]:
        return response_to_events(self.complete(request))
