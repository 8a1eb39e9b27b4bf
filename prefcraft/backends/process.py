"""A model server child process: bound to loopback, logged to a file, ready when /v1/models answers, never orphaned."""

from __future__ import annotations

import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from prefcraft.errors import ServerStartError

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def list_models(base_url: str, timeout_s: float) -> list[str]:
    """The model ids an OpenAI-compatible server serves; raises OSError (or ValueError) if it does not answer."""
    with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=timeout_s) as response:
        return [entry["id"] for entry in json.load(response).get("data", [])]


def _die_with_parent() -> None:
    # Runs in the child before exec: the kernel sends it SIGTERM if prefcraft dies, even by SIGKILL.
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ManagedServer:
    """Starts `command` (with `environment` over the inherited variables), waits until the OpenAI-compatible API at
    `base_url` lists `served_model_name`, stops cleanly.

    Use as a context manager (`with ManagedServer(...) as server:`) or call `start()` / `stop()` yourself.
    """

    def __init__(
        self,
        command: list[str],
        *,
        environment: dict[str, str] | None = None,
        host: str,
        port: int,
        served_model_name: str,
        log_path: Path,
        startup_timeout_s: float,
    ):
        self.command = command
        self.environment = environment or {}
        self.host, self.port = host, port
        self.served_model_name = served_model_name
        self.log_path = Path(log_path)
        self.startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> ManagedServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        logger.info("starting %s (log: %s)", " ".join(self.command), self.log_path)
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self.command,
                env={**os.environ, **self.environment},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        logger.info("server ready at %s serving %s", self.base_url, self.served_model_name)
        return self

    def stop(self, grace_s: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise ServerStartError(
                    f"server exited with code {self._process.returncode} before it was ready "
                    f"(command: {' '.join(self.command)}); last log lines:\n{self.log_tail()}",
                    f"read the full log at {self.log_path}",
                )
            try:
                if self.served_model_name in list_models(self.base_url, timeout_s=2.0):
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.5)
        raise ServerStartError(
            f"server at {self.base_url} was not ready within {self.startup_timeout_s:.0f} s; "
            f"last log lines:\n{self.log_tail()}",
            "raise server.startup_timeout_s or read the log at " + str(self.log_path),
        )

    def __enter__(self) -> ManagedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
