"""vLLM's OpenAI-compatible server, started with its own CLI: `vllm serve <hf-id> ...`."""

from __future__ import annotations

from prefcraft.errors import ConfigError
from prefcraft.settings import ServerSettings


def vllm_command(settings: ServerSettings, port: int) -> list[str]:
    if not settings.model:
        raise ConfigError("server.model is required for the vllm backend", "pass --server-model <hf-model-id>")
    command = [
        settings.executable or "vllm", "serve", settings.model,
        "--host", settings.host,
        "--port", str(port),
        "--served-model-name", settings.served_model_name,
        "--tensor-parallel-size", str(settings.tensor_parallel_size),
    ]  # fmt: skip
    if settings.max_model_len:
        command += ["--max-model-len", str(settings.max_model_len)]
    return command + settings.extra_args
