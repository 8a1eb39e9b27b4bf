"""ManagedServer against a fake `vllm` executable (tests/fixtures/fake_vllm.py), plus the commands it is given."""

import json
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from prefcraft.backends import ManagedServer, free_port, list_models, managed_server
from prefcraft.backends import process as process_module
from prefcraft.backends.bundled import bundled_model_path
from prefcraft.backends.llamacpp import llamacpp_command
from prefcraft.backends.vllm import vllm_command
from prefcraft.errors import ConfigError, ServerStartError
from prefcraft.settings import EMBEDDED_MODEL_NAME, ServerSettings

FAKE_VLLM = Path(__file__).parents[1] / "fixtures" / "fake_vllm.py"


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the fake server writes its argv and pids."""
    path = tmp_path / "fake-vllm.json"
    monkeypatch.setenv("FAKE_VLLM_RECORD", str(path))
    return path


@pytest.fixture
def vllm_settings(tmp_path: Path, record: Path) -> ServerSettings:
    executable = tmp_path / "bin" / "vllm"
    executable.parent.mkdir()
    shutil.copy(FAKE_VLLM, executable)
    executable.chmod(0o755)
    return ServerSettings(
        backend="vllm",
        model="Qwen/Qwen2.5-0.5B-Instruct",
        executable=str(executable),
        log_dir=tmp_path / "logs",
        startup_timeout_s=60,
    )


def read_record(path: Path, within_s: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + within_s
    while not path.exists():
        assert time.monotonic() < deadline, "the fake server never started"
        time.sleep(0.05)
    return json.loads(path.read_text())


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# The commands


def test_llamacpp_command_serves_the_bundled_weights():
    command = llamacpp_command(ServerSettings(), 8123)
    assert command == [
        sys.executable, "-m", "prefcraft.backends.llamacpp",
        "--model", str(bundled_model_path()),
        "--alias", EMBEDDED_MODEL_NAME,
        "--host", "127.0.0.1",
        "--port", "8123",
        "--slots", "4",
        "--ctx-per-slot", "4096",
        "--cache-ram-mib", "256",
    ]  # fmt: skip
    assert bundled_model_path().is_file()
    assert bundled_model_path().suffix == ".gguf"


def test_llamacpp_command_options(tmp_path):
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"GGUF")
    settings = ServerSettings(
        model=str(weights), slots=2, ctx_per_slot=2048, n_threads=3, cache_ram_mib=0,
        extra_args=["--param", "n_batch=1024"],
    )  # fmt: skip
    command = llamacpp_command(settings, 8124)
    assert command[command.index("--model") + 1] == str(weights)
    assert command[command.index("--slots") + 1] == "2"
    assert command[command.index("--ctx-per-slot") + 1] == "2048"
    assert command[command.index("--threads") + 1] == "3"
    assert command[command.index("--cache-ram-mib") + 1] == "0"
    assert command[-2:] == ["--param", "n_batch=1024"]


def test_llamacpp_server_parameters():
    """What the child process hands llama.cpp: the slots share one context; extra parameters are typed."""
    from prefcraft.backends.llamacpp import _params, _parser

    args = _parser().parse_args([
        "--model", "m.gguf", "--alias", "Small", "--port", "9", "--slots", "3", "--ctx-per-slot", "1024",
        "--threads", "2", "--param", "n_batch=1024", "--param", "cache_idle_slots=false",
    ])  # fmt: skip
    params = _params(args)
    assert params.model_alias == {"Small"}
    assert (params.n_parallel, params.n_ctx, params.n_batch) == (3, 3072, 1024)
    assert params.cpuparams.n_threads == params.cpuparams_batch.n_threads == 2
    assert params.cache_prompt and params.endpoint_metrics and not params.cache_idle_slots
    with pytest.raises(SystemExit, match="no attribute 'n_bogus'"):
        _params(_parser().parse_args(["--model", "m", "--alias", "a", "--port", "9", "--param", "n_bogus=1"]))


def test_llamacpp_model_must_be_a_file(tmp_path):
    missing = tmp_path / "missing.gguf"
    with pytest.raises(ConfigError, match="not a file") as caught:
        llamacpp_command(ServerSettings(model=str(missing)), 8125)
    assert str(missing) in str(caught.value)


def test_managed_server_for_settings(vllm_settings, tmp_path):
    settings = vllm_settings.model_copy(update={"port": 8126, "log_dir": tmp_path})
    server = managed_server(settings)
    assert server.command == vllm_command(settings, 8126)
    assert server.base_url == "http://127.0.0.1:8126/v1"
    assert server.log_path == tmp_path / "vllm-8126.log"
    assert not server.running


def test_free_port_can_be_bound():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


# The process


def test_server_starts_becomes_ready_and_leaves_nothing_behind(vllm_settings, record):
    server = managed_server(vllm_settings)
    with server as running:
        assert running is server
        assert server.running
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        assert list_models(server.base_url, timeout_s=5) == ["Qwen/Qwen2.5-0.5B-Instruct"]  # its own name
        started = read_record(record)
        assert started["argv"] == vllm_command(vllm_settings, server.port)
        assert alive(started["pid"]) and alive(started["child_pid"])

    assert not server.running
    assert not alive(started["pid"])
    assert gone(started["child_pid"]), "the server's worker process was orphaned"
    assert "serving Qwen/Qwen2.5-0.5B-Instruct" in server.log_path.read_text()
    with pytest.raises(OSError):
        list_models(server.base_url, timeout_s=2)


def test_server_that_exits_reports_its_log(vllm_settings, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_MODE", "exit")
    server = managed_server(vllm_settings)
    started = time.monotonic()
    with pytest.raises(ServerStartError) as caught:
        server.start()
    assert time.monotonic() - started < 30  # well before the 60 s startup deadline
    assert "exited with code 3" in caught.value.message
    assert "fake vllm: CUDA out of memory" in caught.value.message
    assert str(server.log_path) in caught.value.hint
    assert not server.running


def test_server_that_never_becomes_ready_is_killed_at_the_deadline(vllm_settings, record, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_MODE", "hang")
    server = managed_server(vllm_settings.model_copy(update={"startup_timeout_s": 3.0}))
    started = time.monotonic()
    with pytest.raises(ServerStartError, match="not ready within 3 s") as caught:
        server.start()
    assert time.monotonic() - started < 15
    assert "startup_timeout_s" in caught.value.hint
    hung = read_record(record, within_s=0)
    assert not alive(hung["pid"])
    assert gone(hung["child_pid"])
    assert not server.running


def test_interrupt_inside_the_block_stops_the_server(vllm_settings, record):
    with pytest.raises(KeyboardInterrupt), managed_server(vllm_settings):
        started = read_record(record)
        raise KeyboardInterrupt
    assert not alive(started["pid"])
    assert gone(started["child_pid"])


def test_interrupt_while_waiting_for_readiness_stops_the_server(vllm_settings, record, monkeypatch):
    def interrupted_once_started(base_url: str, timeout_s: float) -> list[str]:
        if record.exists():
            raise KeyboardInterrupt
        raise ConnectionRefusedError

    monkeypatch.setattr(process_module, "list_models", interrupted_once_started)
    server = managed_server(vllm_settings)
    with pytest.raises(KeyboardInterrupt):
        server.start()
    started = read_record(record, within_s=0)
    assert not alive(started["pid"])
    assert gone(started["child_pid"])
    assert not server.running


def test_stop_before_start_and_twice_is_harmless(vllm_settings):
    server = managed_server(vllm_settings)
    server.stop()
    server.start()
    server.stop()
    server.stop()
    assert not server.running


def test_log_tail_of_a_missing_log_is_empty(tmp_path):
    server = ManagedServer(
        ["true"], host="127.0.0.1", port=1, served_model_name="m", log_path=tmp_path / "x.log", startup_timeout_s=1
    )
    assert server.log_tail() == ""


@pytest.mark.server
def test_the_llamacpp_server_stops_at_once_while_it_generates():
    """SIGTERM ends the embedded server even with generations in flight: a server whose prefcraft died gets only that
    signal (its parent-death signal), and would otherwise compute on until each reply ran to max_tokens."""
    import threading
    import urllib.request

    with managed_server(ServerSettings()) as server:
        body = json.dumps({"model": server.served_model_name, "max_tokens": 4000,
                           "messages": [{"role": "user", "content": "Write a very long story about a dragon."}]})
        request = urllib.request.Request(server.base_url + "/chat/completions", body.encode(),
                                         {"Content-Type": "application/json"})

        def ask() -> None:
            try:
                urllib.request.urlopen(request, timeout=120).read()
            except OSError:
                pass  # the server went away mid-reply, as it should

        askers = [threading.Thread(target=ask, daemon=True) for _ in range(2)]
        for asker in askers:
            asker.start()
        time.sleep(2.0)
        started = time.perf_counter()
        server.stop(grace_s=30.0)
        assert time.perf_counter() - started < 5.0
