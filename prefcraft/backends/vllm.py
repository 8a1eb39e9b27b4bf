"""vLLM's OpenAI-compatible server, started with its own CLI: `vllm serve <model> ...`.

With no model set it serves the bundled SmolLM2, converted once into a Hugging Face folder. On a machine without a
GPU (vLLM's CPU build) it starts in float32 and without graph compilation unless told otherwise. It always gets the
server-wide structured-output configuration that prefcraft's compact `vllm` dialect needs: vLLM 0.32 ignores a
request's own `disable_any_whitespace`, and only its guidance backend reads the JSON layout options (`x-guidance`)
that the dialect sends in each schema.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from prefcraft.backends.bundled import bundled_hf_folder
from prefcraft.errors import ConfigError
from prefcraft.settings import ServerSettings

STRUCTURED_OUTPUTS_FLAG = "--structured-outputs-config"
COMPACT_STRUCTURED_OUTPUTS = {"backend": "guidance", "disable_any_whitespace": True}
GPU_DEVICES = ("/dev/nvidiactl", "/dev/kfd")  # NVIDIA's and AMD's


def vllm_command(settings: ServerSettings, port: int) -> list[str]:
    executable = _executable(settings)
    model = settings.model or str(bundled_hf_folder(settings.weights_dir, _python_of(executable)))
    command = [
        executable, "serve", model,
        "--host", settings.host,
        "--port", str(port),
        "--served-model-name", settings.served_name,
        "--tensor-parallel-size", str(settings.tensor_parallel_size),
    ]  # fmt: skip
    if settings.max_model_len:
        command += ["--max-model-len", str(settings.max_model_len)]
    on_cpu = not gpu_present()
    dtype = settings.dtype or ("float32" if on_cpu else None)
    if dtype:
        command += ["--dtype", dtype]
    if settings.enforce_eager if settings.enforce_eager is not None else on_cpu:
        command.append("--enforce-eager")
    if STRUCTURED_OUTPUTS_FLAG not in settings.extra_args:
        command += compact_structured_outputs_flags()
    return command + settings.extra_args


def compact_structured_outputs_flags() -> list[str]:
    """The `vllm serve` flags under which the compact `vllm` dialect's replies are compact."""
    return [STRUCTURED_OUTPUTS_FLAG, json.dumps(COMPACT_STRUCTURED_OUTPUTS)]


def vllm_environment(settings: ServerSettings) -> dict[str, str]:
    """Variables the server needs beside the inherited ones: the KV cache's size on a CPU; no hub for local weights."""
    environment = {} if gpu_present() else {"VLLM_CPU_KVCACHE_SPACE": str(settings.cpu_kv_cache_gib)}
    if settings.model is None:
        environment["HF_HUB_OFFLINE"] = "1"
    return environment


def gpu_present() -> bool:
    return any(Path(device).exists() for device in GPU_DEVICES)


def _executable(settings: ServerSettings) -> str:
    executable = settings.executable or "vllm"
    found = shutil.which(executable)
    if found is None:
        raise ConfigError(
            f"the vllm executable {executable!r} was not found",
            "install vLLM (`make vllm` puts its CPU build in .venv-vllm) and pass --server-executable "
            ".venv-vllm/bin/vllm, or put `vllm` on PATH",
        )
    return found


def _python_of(executable: str) -> Path:
    """The Python of the environment vLLM is installed in: its script's interpreter line, else the python beside it."""
    first_line = Path(executable).read_bytes()[:512].split(b"\n", 1)[0].decode(errors="replace")
    if first_line.startswith("#!") and Path(first_line[2:].strip()).is_file():
        return Path(first_line[2:].strip())
    return Path(executable).with_name("python")
