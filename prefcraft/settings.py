"""Settings: which models play which role, where they are served, where runs are tracked.

Precedence, lowest first: defaults < TOML config file < environment (`PREFCRAFT_...`) < command-line flags.
Nested keys in the environment use a double underscore: `PREFCRAFT_TASK__MODEL=hosted_vllm/Qwen/Qwen2.5-7B-Instruct`.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefcraft.errors import ConfigError

ENV_PREFIX = "PREFCRAFT_"
EMBEDDED_MODEL_NAME = "SmolLM2-135M-Instruct"
Role = Literal["task", "prompt", "judge"]


class ModelSettings(BaseModel):
    """One model: a litellm-style string plus how to reach it and how to sample from it."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(f"hosted_vllm/{EMBEDDED_MODEL_NAME}", description="litellm model string")
    api_base: str | None = Field(None, description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str | None = Field(None, description="name of the environment variable that holds the API key")
    structured_output: Literal["llamacpp", "json_schema", "none"] = Field(
        "llamacpp",
        description="how constrained decoding is requested: llama.cpp's json_object+schema, the OpenAI/vLLM "
        "json_schema form, or not at all",
    )
    temperature: float = Field(0.0, ge=0.0)
    max_tokens: int = Field(512, gt=0)
    timeout_s: float = Field(60.0, gt=0)
    num_retries: int = Field(1, ge=0)


class ServerSettings(BaseModel):
    """The model server that prefcraft starts itself when a model has no api_base."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["llamacpp", "vllm"] = "llamacpp"
    model: str | None = Field(None, description="GGUF path (llamacpp; default: bundled SmolLM2) or HF id (vllm)")
    served_model_name: str = EMBEDDED_MODEL_NAME
    host: str = "127.0.0.1"
    port: int | None = Field(None, description="default: a free port")
    n_ctx: int = Field(4096, description="llamacpp context length")
    n_threads: int | None = Field(None, description="llamacpp CPU threads (default: all cores)")
    tensor_parallel_size: int = Field(1, ge=1, description="vllm --tensor-parallel-size")
    max_model_len: int | None = Field(None, description="vllm --max-model-len")
    extra_args: list[str] = Field(default_factory=list, description="more flags passed to the server as they are")
    executable: str | None = Field(None, description="vllm executable (default: `vllm` on PATH)")
    startup_timeout_s: float = Field(300.0, gt=0)
    log_dir: Path = Path(".prefcraft/logs")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: ModelSettings = Field(default_factory=ModelSettings, description="the model a program runs on")
    prompt: ModelSettings | None = Field(None, description="proposer model for optimizers (default: task)")
    judge: ModelSettings | None = Field(None, description="grader model for metrics (default: task)")
    serve: bool = Field(True, description="start the configured server for every model that has no api_base")
    server: ServerSettings = Field(default_factory=ServerSettings)
    cache_dir: Path = Path(".prefcraft/cache")
    tracking_uri: str = "sqlite:///mlflow.db"
    experiment: str = "prefcraft"
    num_threads: int = Field(4, ge=1)
    seed: int = 0

    def model_for(self, role: Role) -> ModelSettings:
        return getattr(self, role) or self.task

    def roles_needing_server(self) -> list[Role]:
        roles: tuple[Role, ...] = ("task", "prompt", "judge")
        return [role for role in roles if self.model_for(role).api_base is None] if self.serve else []

    def with_api_base(self, api_base: str) -> Settings:
        """A copy in which every model that had no api_base points at `api_base`."""
        updates = {
            role: self.model_for(role).model_copy(update={"api_base": api_base})
            for role in self.roles_needing_server()
        }
        return self.model_copy(update=updates)


def load_settings(
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Build settings from defaults, an optional TOML file, the environment and explicit overrides (CLI flags)."""
    merged: dict[str, Any] = {}
    if config_file is not None:
        _deep_merge(merged, _read_toml(Path(config_file)))
    _deep_merge(merged, _from_environment(os.environ if environ is None else environ))
    _deep_merge(merged, overrides or {})
    try:
        return Settings.model_validate(merged)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in issue['loc'])}: {issue['msg']}" for issue in error.errors()
        )
        source = f"config file {config_file}, " if config_file else ""
        raise ConfigError(
            f"invalid settings ({problems})",
            f"check {source}the {ENV_PREFIX}* environment variables and the command-line flags",
        ) from None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from None


def _from_environment(environ: dict[str, str] | os._Environ[str]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        *parents, leaf = name[len(ENV_PREFIX) :].lower().split("__")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def _deep_merge(target: dict[str, Any], source: dict[str, Any]) -> None:
    for key, value in source.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = value
