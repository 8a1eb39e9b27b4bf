"""Model servers prefcraft can start and keep up: the embedded llama.cpp server and vLLM."""

from __future__ import annotations

from prefcraft.backends.llamacpp import llamacpp_command
from prefcraft.backends.process import ManagedServer, free_port, list_models
from prefcraft.backends.vllm import vllm_command, vllm_environment
from prefcraft.settings import ServerSettings

_COMMANDS = {"llamacpp": llamacpp_command, "vllm": vllm_command}
_ENVIRONMENTS = {"vllm": vllm_environment}


def managed_server(settings: ServerSettings) -> ManagedServer:
    """A not-yet-started server for `settings`; use it as a context manager."""
    port = settings.port or free_port(settings.host)
    return ManagedServer(
        _COMMANDS[settings.backend](settings, port),
        environment=_ENVIRONMENTS[settings.backend](settings) if settings.backend in _ENVIRONMENTS else {},
        host=settings.host,
        port=port,
        served_model_name=settings.served_name,
        log_path=settings.log_dir / f"{settings.backend}-{port}.log",
        startup_timeout_s=settings.startup_timeout_s,
    )


__all__ = ["ManagedServer", "free_port", "list_models", "managed_server"]
