"""Settings: which models play which role, where they are served, where runs are tracked.

Precedence, lowest first: defaults < TOML config file < environment (`PREFCRAFT_...`) < command-line flags.
Nested keys in the environment use a double underscore: `PREFCRAFT_TASK__MODEL=hosted_vllm/Qwen/Qwen2.5-7B-Instruct`.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from prefcraft.errors import ConfigError
from prefcraft.options import under_current_names

ENV_PREFIX = "PREFCRAFT_"
RENAMED_SETTINGS = {"num_threads": "threads", "experiment": "mlflow_experiment"}
"""Top-level settings' former names (old: new), taken for one release with a warning."""
EMBEDDED_MODEL_NAME = "SmolLM2-135M-Instruct"
SELF_HOSTED_PROVIDER = "hosted_vllm/"  # litellm's provider for any OpenAI-compatible server of one's own
Dialect = Literal["json_schema", "llguidance", "vllm", "none"]
StructuredOutput = Literal["auto", Dialect]
SERVED_DIALECTS: dict[str, Dialect] = {"llamacpp": "llguidance", "vllm": "vllm"}  # compact JSON on each served backend
Role = Literal["task", "prompt", "judge"]
FIELD_KEY = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*")


def _field_key(key: str) -> str:
    if not FIELD_KEY.fullmatch(key):
        raise ValueError(f"{key!r} is not Owner.field: the signature or pydantic model declaring it, a dot, its field")
    return key


FieldKey = Annotated[str, AfterValidator(_field_key)]


class ModelSettings(BaseModel):
    """One model: a litellm-style string plus how to reach it and how to sample from it."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(f"{SELF_HOSTED_PROVIDER}{EMBEDDED_MODEL_NAME}", description="litellm model string")
    api_base: str | None = Field(
        None, description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (default: none: a server "
        "prefcraft starts, for a hosted_vllm/ model)",
    )
    api_bases: list[str] = Field(
        default_factory=list,
        description="two or more base URLs serving the same model, instead of api_base: calls are spread over them "
        "by litellm's Router",
    )
    routing_strategy: Literal["simple-shuffle", "least-busy", "latency-based-routing"] = Field(
        "simple-shuffle", description="how litellm's Router picks one of api_bases for each call"
    )
    api_key_env: str | None = Field(
        None, description="name of the environment variable that holds the API key (default: none: the provider's own)"
    )
    structured_output: StructuredOutput = Field(
        "auto",
        description="how constrained decoding is requested: json_schema, the OpenAI form that every server and hosted "
        "API takes; llguidance, llama.cpp's grammar with compact JSON (no free whitespace); vllm, vLLM's "
        "structured_outputs field with compact JSON; none, no constraint; auto, the compact form of the server "
        "prefcraft starts itself, else json_schema",
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature")
    top_p: float | None = Field(
        None, gt=0.0, le=1.0, description="nucleus sampling (default: none sent, the server's own applies)"
    )
    max_tokens: int = Field(512, gt=0, description="longest answer, in tokens")
    timeout_s: float = Field(
        300.0, gt=0, description="seconds a call may wait for its reply; a call that timed out is never sent again"
    )
    num_retries: int = Field(2, ge=0, description="retries of a call whose connection was refused or broke, or that "
                             "the server refused for now (429, 5xx), with a growing wait")

    @model_validator(mode="after")
    def _one_way_to_each_endpoint(self) -> ModelSettings:
        if self.api_base and self.api_bases:
            raise ValueError("give api_base (one endpoint) or api_bases (several), not both")
        if len(self.api_bases) == 1:
            raise ValueError("api_bases needs two or more endpoints; give a single one as api_base")
        repeated = sorted({api_base for api_base in self.api_bases if self.api_bases.count(api_base) > 1})
        if repeated:
            raise ValueError(f"api_bases lists {', '.join(repeated)} more than once")
        return self

    @property
    def dialect(self) -> Dialect:
        """The structured-output dialect sent: "auto" left unresolved (a model at an endpoint) is the OpenAI form."""
        return "json_schema" if self.structured_output == "auto" else self.structured_output

    @property
    def self_hosted(self) -> bool:
        """Whether the model runs on an OpenAI-compatible server of one's own (litellm's `hosted_vllm/` provider: vLLM,
        llama.cpp), rather than on a hosted API."""
        return self.model.startswith(SELF_HOSTED_PROVIDER)

    @property
    def endpoints(self) -> list[str]:
        """Every base URL this model is reached at: api_base, or api_bases; none for a hosted or served model."""
        return [self.api_base] if self.api_base else list(self.api_bases)


class ServerSettings(BaseModel):
    """The model server that prefcraft starts itself when a model has no api_base."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["llamacpp", "vllm"] = Field("llamacpp", description="the server prefcraft starts")
    model: str | None = Field(
        None, description="GGUF path (llamacpp) or Hugging Face id or folder (vllm) (default: the bundled SmolLM2, for "
        "vllm converted once into a Hugging Face folder under weights_dir)",
    )
    served_model_name: str | None = Field(
        None, description="the name the server serves the model under (default: the bundled model's name, or the "
        "model's own: its Hugging Face id or folder for vllm, its file name for a llamacpp GGUF)",
    )
    host: str = Field("127.0.0.1", description="address the server binds")
    port: int | None = Field(None, description="server port (default: a free one)")
    slots: int = Field(4, ge=1, description="llamacpp parallel slots: requests decoded together in one batch")
    ctx_per_slot: int = Field(4096, ge=512, description="llamacpp context length of each slot")
    n_threads: int | None = Field(None, ge=1, description="llamacpp CPU threads (default: all cores)")
    cache_ram_mib: int = Field(
        256, ge=0, description="llamacpp host-memory prompt cache beyond the slots' own (0: off)"
    )
    tensor_parallel_size: int = Field(1, ge=1, description="vllm --tensor-parallel-size")
    max_model_len: int | None = Field(None, description="vllm --max-model-len (default: the model's)")
    dtype: str | None = Field(
        None, description="vllm --dtype (default: float32 on a machine without a GPU, where vLLM's own choice, "
        "bfloat16, is slower and answers worse on CPUs without bfloat16 support; vLLM's choice on a GPU)",
    )
    enforce_eager: bool | None = Field(
        None, description="vllm --enforce-eager, no graph compilation (default: on without a GPU, where compiling "
        "doubles the start-up time)",
    )
    cpu_kv_cache_gib: PositiveInt = Field(2, description="vllm on a CPU: GiB of memory for the KV cache")
    extra_args: list[str] = Field(default_factory=list, description="more flags passed to the server as they are")
    executable: str | None = Field(
        None, description="vllm executable (default: `vllm` on PATH; `make vllm` installs one in .venv-vllm/bin)"
    )
    weights_dir: Path = Field(
        default_factory=lambda: Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "prefcraft",
        description="vllm: where the bundled SmolLM2 is kept converted into a Hugging Face folder",
    )
    startup_timeout_s: float = Field(300.0, gt=0, description="seconds a server may take to answer its first request")
    log_dir: Path = Field(Path(".prefcraft/logs"), description="where servers prefcraft starts write their logs")

    @property
    def served_name(self) -> str:
        """The name the model answers to: `served_model_name`, else the model's own (what a plain `vllm serve` would
        serve it as), else the bundled model's: so that what is served is never named as another model."""
        if self.served_model_name:
            return self.served_model_name
        if self.model is None:
            return EMBEDDED_MODEL_NAME
        return Path(self.model).stem if self.backend == "llamacpp" else self.model

    @property
    def identity(self) -> str:
        """What answers on a server prefcraft starts: backend and model, not the address (its port changes per run)."""
        return f"{self.backend}:{self.model or 'bundled'}:{self.served_name}"


class SmallModelProfile(BaseModel):
    """Length bounds that only a tiny model needs, so that none of its calls runs to the token budget: characters of
    each free-text output, sizes of lists, how much of each retrieved post a prompt shows, and how many demos a
    SynthesizeMe judge holds. With the profile off, outputs are bounded only by each role's `max_tokens`, as in the
    papers.

    A per-field bound is keyed `Owner.field`: the signature, or the pydantic model of a structured output, that declares
    the field. It bounds every string (`field_chars`) or every list (`field_items`) inside that field. The defaults are
    declared beside each signature (`small_model_bounds` in `signatures/<component>.py`,
    `prefcraft.engine.small_model`); the entries given here are added to them, or replace them.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = Field(
        None,
        description="turn the profile on or off; unset, it is on when the task model is the bundled SmolLM2 that "
        "prefcraft serves itself, and off for a model with an api_base or another served model",
    )
    string_chars: PositiveInt = Field(400, description="characters of any free-text output not in field_chars")
    list_items: PositiveInt = Field(8, description="items of any list, and entries of any map, not in field_items")
    field_chars: dict[FieldKey, PositiveInt] = Field(
        default_factory=dict, description="characters of each string of a field, added to the bounds the signatures "
        "declare or replacing them",
    )
    field_items: dict[FieldKey, PositiveInt] = Field(
        default_factory=dict, description="items of each list of a field, added to the bounds the signatures declare "
        "or replacing them",
    )
    post_chars: PositiveInt = Field(300, description="LaMP-QA: characters shown of each retrieved profile post")
    max_demos: PositiveInt = Field(
        4, description="SynthesizeMe: most demos in a fitted judge, reasoned and labeled together, so that the prompt "
        "fits a 4k context (the paper: every verified train pair may be one)"
    )


class Settings(BaseSettings):
    """Everything a command needs. `Settings(...)` holds only what it is given; `load_settings` layers the sources."""

    model_config = SettingsConfigDict(extra="forbid", env_prefix=ENV_PREFIX, env_nested_delimiter="__")

    task: ModelSettings = Field(default_factory=ModelSettings, description="the model a program runs on")
    prompt: ModelSettings | None = Field(None, description="proposer model for optimizers (default: task)")
    judge: ModelSettings | None = Field(None, description="grader model for metrics (default: task)")
    serve: bool = Field(
        True, description="start the configured server for every self-hosted (hosted_vllm/) model that has no "
        "api_base; off, every hosted_vllm/ model needs one (a hosted API's model, openai/... and the like, never does)",
    )
    server: ServerSettings = Field(default_factory=ServerSettings)
    cache_dir: Path = Field(Path(".prefcraft/cache"), description="DSPy's cache of LM replies, on disk")
    tracking_uri: str = Field("sqlite:///mlflow.db", description="MLflow tracking URI")
    mlflow_experiment: str = Field("prefcraft", description="the MLflow experiment the runs go to")
    threads: int = Field(4, ge=1, description="parallel LM calls")
    seed: int = Field(0, description="seed of every random choice: samples, demo sets, optimizers")
    resume: bool = Field(False, description="continue this command's interrupted MLflow run (same params) instead of "
                         "opening a new one")
    trace: bool = Field(False, description="log every LM call as a span of an MLflow trace (DSPy autologging's "
                        "traces): for debugging a few calls; at scale it costs more than the calls")
    small_model: SmallModelProfile = Field(
        default_factory=SmallModelProfile, description="length bounds that only a tiny model needs"
    )
    _served_api_base: str | None = PrivateAttr(None)  # where `with_api_base` pointed the models prefcraft serves

    @model_validator(mode="before")
    @classmethod
    def _former_names(cls, given: Any) -> Any:
        """A setting given by its former name (in a file, a variable or `Settings(...)`) is taken under its new one,
        with a warning, for one release."""
        return under_current_names(given, RENAMED_SETTINGS, "setting") if isinstance(given, dict) else given

    def model_for(self, role: Role) -> ModelSettings:
        return getattr(self, role) or self.task

    def roles_needing_server(self) -> list[Role]:
        """The roles whose model prefcraft serves: a self-hosted model (`hosted_vllm/`) with no endpoint. A hosted
        API's model (`openai/...`, any other litellm provider) is reached by litellm with its key variable."""
        roles: tuple[Role, ...] = ("task", "prompt", "judge")
        if not self.serve:
            return []
        return [role for role in roles if not self.model_for(role).endpoints and self.model_for(role).self_hosted]

    def with_api_base(self, api_base: str) -> Settings:
        """A copy in which every model that had no api_base points at `api_base`, the server prefcraft started, under
        the name it serves: an "auto" structured output becomes that server's compact dialect."""
        updates = {
            role: self.model_for(role).model_copy(update={
                "api_base": api_base, "structured_output": self.dialect(role),
                "model": f"{SELF_HOSTED_PROVIDER}{self.server.served_name}",
            })
            for role in self.roles_needing_server()
        }
        served = self.model_copy(update=updates)
        served._served_api_base = api_base
        return served

    def endpoint(self, role: Role) -> str:
        """Where `role`'s model answers, as a run records it: its endpoints, or the server prefcraft starts for it."""
        return f"served {self.server.identity}" if self.served_here(role) else ", ".join(self.model_for(role).endpoints)

    def served_here(self, role: Role) -> bool:
        """Whether prefcraft serves `role`'s model: it will start the server, or `with_api_base` pointed at it."""
        api_base = self.model_for(role).api_base
        return role in self.roles_needing_server() or (api_base is not None and api_base == self._served_api_base)

    def dialect(self, role: Role) -> Dialect:
        """The structured-output dialect of `role`'s calls: "auto" is the compact form of the server prefcraft starts
        for it, else the OpenAI json_schema form."""
        model = self.model_for(role)
        if model.structured_output == "auto" and self.served_here(role):
            return SERVED_DIALECTS[self.server.backend]
        return model.dialect

    def small_model_profile(self) -> SmallModelProfile | None:
        """The small-model profile when it is on: as `small_model.enabled` says, or, unset, when the task model is the
        bundled SmolLM2, whichever backend serves it: served by prefcraft from the bundled weights, or reached at an
        endpoint under the bundled model's own name (`prefcraft serve` in another shell)."""
        enabled = self.small_model.enabled
        if enabled is None:
            if self.served_here("task"):
                enabled = self.server.model is None
            else:
                enabled = self.task.endpoints != [] and self.task.model.rsplit("/", 1)[-1] == EMBEDDED_MODEL_NAME
        return self.small_model if enabled else None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


def load_settings(
    config_file: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Build settings from defaults, an optional TOML file, the environment and explicit overrides (CLI flags)."""
    overrides = overrides or {}
    environ = os.environ if environ is None else environ
    config = _config_source(Path(config_file)) if config_file is not None else None
    # Highest precedence first; pydantic-settings merges nested tables key by key.
    sources = (InitSettingsSource(Settings, overrides), _EnvironmentSource(environ), *([config] if config else []))
    try:
        return Settings(_build_sources=(sources, {}))
    except SettingsError as error:
        raise ConfigError(f"invalid settings ({error})", f"a {ENV_PREFIX}* table or list must be JSON") from None
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, issue['loc']))}: {issue['msg']}" for issue in error.errors())
        source = f"config file {config_file}, " if config_file else ""
        raise ConfigError(
            f"invalid settings ({problems})",
            f"check {source}the {ENV_PREFIX}* environment variables and the command-line flags",
        ) from None


class _EnvironmentSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping. It also passes on unknown `PREFCRAFT_*` names, which
    it would ignore, so that `extra="forbid"` rejects a misspelt variable."""

    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ
        super().__init__(Settings)

    def _load_env_vars(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.environ.items()}

    def __call__(self) -> dict[str, Any]:
        prefix = ENV_PREFIX.lower()
        unknown = {
            name.removeprefix(prefix): value
            for name, value in self.env_vars.items()
            if name.startswith(prefix) and name.removeprefix(prefix).split("__")[0] not in Settings.model_fields
        }
        return {**unknown, **super().__call__()}


def _config_source(path: Path) -> TomlConfigSettingsSource:
    if not path.is_file():  # pydantic-settings skips a missing file
        raise ConfigError(f"config file {path} does not exist")
    try:
        return TomlConfigSettingsSource(Settings, toml_file=path)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from None
