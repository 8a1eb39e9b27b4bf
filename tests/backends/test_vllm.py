import pytest

from prefcraft.backends.vllm import vllm_command
from prefcraft.errors import ConfigError
from prefcraft.settings import ServerSettings


def test_minimal_command():
    settings = ServerSettings(backend="vllm", model="Qwen/Qwen2.5-0.5B-Instruct")
    assert vllm_command(settings, 8123) == [
        "vllm", "serve", "Qwen/Qwen2.5-0.5B-Instruct",
        "--host", "127.0.0.1",
        "--port", "8123",
        "--served-model-name", "SmolLM2-135M-Instruct",
        "--tensor-parallel-size", "1",
    ]  # fmt: skip


def test_every_option():
    settings = ServerSettings(
        backend="vllm",
        model="Qwen/Qwen2.5-7B-Instruct",
        served_model_name="qwen-7b",
        host="0.0.0.0",
        tensor_parallel_size=2,
        max_model_len=8192,
        extra_args=["--enforce-eager", "--gpu-memory-utilization", "0.8"],
        executable="/opt/vllm/bin/vllm",
    )
    assert vllm_command(settings, 9000) == [
        "/opt/vllm/bin/vllm", "serve", "Qwen/Qwen2.5-7B-Instruct",
        "--host", "0.0.0.0",
        "--port", "9000",
        "--served-model-name", "qwen-7b",
        "--tensor-parallel-size", "2",
        "--max-model-len", "8192",
        "--enforce-eager", "--gpu-memory-utilization", "0.8",
    ]  # fmt: skip


def test_a_model_is_required():
    with pytest.raises(ConfigError, match=r"server\.model is required") as caught:
        vllm_command(ServerSettings(backend="vllm"), 8000)
    assert "--server-model" in caught.value.hint
