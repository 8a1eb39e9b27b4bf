"""`prefcraft serve`: start a model server and keep it up until Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from prefcraft.backends import managed_server
from prefcraft.settings import SERVED_DIALECTS, Settings


def serve(settings: Settings, announce: Callable[[str], None]) -> None:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with managed_server(settings.server) as server:
        announce(
            f"serving {server.served_model_name} at {server.base_url} (log: {server.log_path})\n"
            f"use it with: --task-model hosted_vllm/{server.served_model_name} --task-api-base {server.base_url} "
            f"--task-structured-output {SERVED_DIALECTS[settings.server.backend]}\n"
            "press Ctrl-C to stop"
        )
        while not stop.wait(1.0):
            if not server.running:
                raise SystemExit(f"the server stopped unexpectedly; see {server.log_path}")
