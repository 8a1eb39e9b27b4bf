"""`prefcraft serve --backend vllm` as a user runs it (start, health, stop), a vLLM without prefcraft's
structured-output configuration named once, and a command killed mid-way on the real vLLM, then resumed."""

import contextlib
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError
from fault_commands import flags, parent_runs
from fault_proxy import fault_proxy
from test_failure_matrix import argv
from test_vllm_dialects import CALLS

from prefcraft.backends import free_port
from prefcraft.engine.lm import build_adapter, build_lm
from prefcraft.engine.routing import CompactReplies
from prefcraft.settings import ModelSettings

pytestmark = pytest.mark.vllm

# What a plain `vllm serve` does with structured outputs: its xgrammar backend, which reads no layout options.
PLAIN_VLLM = """--server-extra-args=--structured-outputs-config '{"backend": "xgrammar"}'"""


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def processes_on(port: int) -> list[str]:
    """The command lines of live processes that name `port`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = stat.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"--port {port} " in command and "pytest" not in command:
            found.append(command)
    return found


def test_prefcraft_serve_starts_vllm_answers_and_stops_leaving_nothing(vllm_executable, tmp_path, caplog,
                                                                       monkeypatch):
    """Started with xgrammar, as a plain `vllm serve` is: prefcraft's compact dialect is ignored, and said so."""
    port = free_port()
    command = [sys.executable, "-m", "prefcraft.commands.main", "serve", "--server-backend", "vllm",
               "--server-executable", str(vllm_executable), "--server-port", str(port), PLAIN_VLLM]
    started = time.monotonic()
    serving = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        while not healthy(port):
            assert serving.poll() is None, serving.stdout.read()
            assert time.monotonic() - started < 600, "vLLM was not healthy within 600 s"
            time.sleep(1)
        monkeypatch.setattr(CompactReplies, "warned", set())
        model = ModelSettings(api_base=f"http://127.0.0.1:{port}/v1", max_tokens=256, structured_output="vllm")
        with dspy.context(lm=build_lm(model), adapter=build_adapter(model)):
            for program, inputs in CALLS.values():
                with contextlib.suppress(AdapterParseError):  # a greedy model may loop on whitespace until cut
                    program(**inputs)
        said = [record.getMessage() for record in caplog.records if "ignores the compact JSON" in record.getMessage()]
        assert len(said) == 1 and "--structured-outputs-config" in said[0]
    finally:
        serving.send_signal(signal.SIGTERM)
        output, _ = serving.communicate(timeout=60)
    assert serving.returncode == 0, output
    assert f"serving SmolLM2-135M-Instruct at http://127.0.0.1:{port}/v1" in output
    assert "--task-structured-output vllm" in output  # the compact form it was started for, not auto's json_schema
    deadline = time.monotonic() + 30
    while processes_on(port):
        assert time.monotonic() < deadline, f"left running: {processes_on(port)}"
        time.sleep(0.5)


def prefcraft_command(arguments: list[str], folder: Path) -> subprocess.Popen:
    """The command in a process of its own (not forked from this multi-threaded one), its output in `folder`."""
    with (folder / "command.log").open("ab") as log:
        return subprocess.Popen([sys.executable, "-m", "prefcraft.commands.main", *arguments], cwd=folder, stdout=log,
                                stderr=subprocess.STDOUT)


def test_a_command_killed_midway_resumes_and_sends_no_completed_call_again(vllm_server, tmp_path):
    """SIGKILL leaves no chance to clean up: the run stays RUNNING, the calls answered before are in DSPy's cache.
    Each wait is bounded: a command or a server that hangs fails the test with both logs."""
    step = "cupid evaluate"

    def logs() -> str:
        return (f"command:\n{(tmp_path / 'command.log').read_text()[-3000:]}\n"
                f"vLLM:\n{vllm_server.log_path.read_text(errors='replace')[-3000:]}")

    with fault_proxy(vllm_server.base_url) as proxy:
        arguments = argv(step, *flags(tmp_path, proxy.base_url), "--task-structured-output", "vllm")
        killed = prefcraft_command(arguments, tmp_path)
        try:
            deadline = time.monotonic() + 300
            while len(proxy.answered) < 4:
                assert killed.poll() is None and time.monotonic() < deadline, f"never got half-way\n{logs()}"
                time.sleep(0.05)
        finally:
            killed.kill()
            killed.wait(timeout=30)
        time.sleep(1)  # the answers in flight at the kill reach the proxy
        before = list(proxy.answered)
        proxy.answered.clear()
        assert [run.info.status for run in parent_runs(tmp_path)] == ["RUNNING"]
        resumed = prefcraft_command(argv(step, "--resume", *flags(tmp_path, proxy.base_url),
                                         "--task-structured-output", "vllm"), tmp_path)
        try:
            assert resumed.wait(timeout=900) == 0, logs()
        except subprocess.TimeoutExpired:
            pytest.fail(f"the resumed command still ran after 900 s\n{logs()}")
        finally:
            resumed.kill()
    again = set(before) & set(proxy.answered)
    assert len(again) <= 2, "completed calls were sent again"  # at most those in flight at the kill, one per thread
    assert proxy.answered
    assert [(run.info.status, run.data.tags.get("prefcraft.resumed")) for run in parent_runs(tmp_path)] == [
        ("FINISHED", "1")]
