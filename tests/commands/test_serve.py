"""`prefcraft serve` announces how to point a command at the server it started, dialect included. No model."""

from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from prefcraft.commands import serve as serve_command
from prefcraft.settings import Settings


@pytest.mark.parametrize(("backend", "dialect"), [("llamacpp", "llguidance"), ("vllm", "vllm")])
def test_the_hint_names_the_compact_dialect_of_the_server_it_started(monkeypatch, tmp_path, backend, dialect):
    stopped = SimpleNamespace(served_model_name="SmolLM2-135M-Instruct", base_url="http://127.0.0.1:9/v1",
                              log_path=tmp_path / "server.log", running=False)

    @contextmanager
    def started(server_settings):
        assert server_settings.backend == backend
        yield stopped

    monkeypatch.setattr(serve_command, "managed_server", started)
    monkeypatch.setattr(serve_command.signal, "signal", lambda *_: None)  # pytest keeps its own Ctrl-C handler
    said = []
    with pytest.raises(SystemExit, match="stopped unexpectedly"):
        serve_command.serve(Settings(server={"backend": backend}), said.append)
    assert (f"use it with: --task-model hosted_vllm/SmolLM2-135M-Instruct --task-api-base http://127.0.0.1:9/v1 "
            f"--task-structured-output {dialect}\n") in said[0]
