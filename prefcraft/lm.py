"""Building DSPy LMs from settings, so that one model string reaches llama.cpp, vLLM and hosted APIs alike."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import dspy
from dspy.clients import DISK_CACHE_LIMIT
from dspy.utils.callback import BaseCallback

from prefcraft.adapter import LengthBounds, SchemaAdapter
from prefcraft.backends.process import list_models
from prefcraft.errors import ConfigError, ServerUnreachableError
from prefcraft.lm_cache import ReplyCache
from prefcraft.routing import RouterEngine, endpoint_router
from prefcraft.settings import ModelSettings, Settings, SmallModelProfile

# litellm fetches its model cost map at import and retries for seconds when offline; the bundled copy is enough.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class StopCheck(BaseCallback):
    """Raises, before any LM call of any thread starts, the stop that a signal requested (`runtime.stoppable` sets
    `requested`), so that no request leaves after Ctrl-C or SIGTERM.

    The signal's own exception reaches only the main thread, at whatever line it is on: a finalizer it interrupts or a
    library's catch-all can swallow it, and a thread pool's workers never see it.
    """

    requested: type[BaseException] | None = None

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        if StopCheck.requested is not None:
            raise StopCheck.requested()


def build_lm(model: ModelSettings) -> dspy.LM:
    """A dspy.LM that sends temperature and a `max_tokens` every OpenAI-compatible server honours, and that sends no
    call once a stop was requested (StopCheck).

    A model on several endpoints (`api_bases`) sends each call through litellm's Router, which spreads them.
    """
    sampling = {"temperature": model.temperature, "max_tokens": model.max_tokens, "num_retries": model.num_retries,
                "callbacks": [StopCheck()]}
    api_key = _api_key(model)
    if model.api_bases:
        return dspy.LM(model.model, engine=RouterEngine(endpoint_router(model, api_key)), **sampling)
    kwargs: dict[str, object] = {**sampling, "timeout": model.timeout_s}
    if model.api_base:
        kwargs["api_base"] = model.api_base
    if api_key:
        kwargs["api_key"] = api_key
    # DSPy's native engine sends `max_completion_tokens` for openai/ models, which llama.cpp ignores (runaway
    # generations); its litellm engine sends `max_tokens`. hosted_vllm/ sends `max_tokens` natively.
    engine = "litellm" if model.model.startswith("openai/") and model.api_base else "auto"
    return dspy.LM(model.model, engine=engine, **kwargs)


def _api_key(model: ModelSettings) -> str | None:
    """The key named by `api_key_env`; else a placeholder for a self-hosted server, which wants one but checks none."""
    if model.api_key_env:
        if model.api_key_env not in os.environ:
            raise ConfigError(f"environment variable {model.api_key_env} (api_key_env of {model.model}) is not set")
        return os.environ[model.api_key_env]
    return "EMPTY" if model.endpoints else None


def build_adapter(model: ModelSettings, profile: SmallModelProfile | None = None) -> SchemaAdapter:
    """The structured-output adapter of `model`, bounded by the small-model profile when it is on (Settings'
    `small_model_profile()`); without one, `max_tokens` alone bounds each reply, as in the papers."""
    if profile is None:
        return SchemaAdapter(dialect=model.structured_output)
    bounds = LengthBounds(profile.string_chars, profile.list_items, profile.field_chars, profile.field_items)
    return SchemaAdapter(dialect=model.structured_output, bounds=bounds)


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


def check_reachable(model: ModelSettings) -> None:
    """Fail fast, naming the endpoint, when a server of a self-hosted model does not answer."""
    for api_base in model.endpoints:
        _check_endpoint(model, api_base)


def _check_endpoint(model: ModelSettings, api_base: str) -> None:
    try:
        served = list_models(api_base, timeout_s=min(max(model.timeout_s, PROBE_MIN_TIMEOUT_S), 10.0))
    except (OSError, ValueError) as error:
        raise ServerUnreachableError(api_base, f"{type(error).__name__}: {error}") from None
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


def use_disk_cache(directory: Path) -> None:
    """DSPy's on-disk cache (with its in-memory one) in `directory`: for this process and every thread it starts.

    It is a ReplyCache, as `dspy.configure_cache` would build DSPy's own: replies cut short are never stored.
    """
    dspy.cache = ReplyCache(
        enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=str(directory),
        disk_size_limit_bytes=DISK_CACHE_LIMIT,
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
