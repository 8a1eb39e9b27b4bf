"""A stand-in OpenAI-compatible server for tests without a model: it lists the embedded model's name, answers each
chat request with JSON that fits the request's schema (strings "hi", the first value of an enum, the lowest number)
and keeps every request body; with `numbered`, each answer's strings carry the request's number ("hi 3"), so that
no two answers are alike; with `indent`, answers are pretty-printed, as by a vLLM that ignores compact JSON.
`delay_s` holds each answer back, as a model server elsewhere would; the first `hang_ups` requests are closed
unanswered, as by a server that restarts; once `die_after` chat requests came, every request is, as by a server
killed mid-step."""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prefcraft.experiments.rehearsal.instant_server import fill, requested_schema
from prefcraft.settings import EMBEDDED_MODEL_NAME

# The schema filling lives in the package; benchmarks/client_overhead.py imports it from here.
__all__ = ["StandInServer", "fill", "requested_schema"]


class StandInServer:
    def __init__(self, delay_s: float = 0.0, hang_ups: int = 0, die_after: int | None = None,
                 numbered: bool = False, indent: int | None = None) -> None:
        self.delay_s = delay_s
        self.hang_ups = hang_ups
        self.die_after = die_after
        self.numbered = numbered
        self.indent = indent
        self.numbers = itertools.count(1)
        self.bodies: list[dict[str, Any]] = []
        self.server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self.api_base = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def dead(self) -> bool:
        return self.die_after is not None and len(self.bodies) >= self.die_after

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up on a slow answer is part of the test


def _handler(standin: StandInServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if standin.dead:
                self.close_connection = True
                return
            self._send({"object": "list", "data": [{"id": EMBEDDED_MODEL_NAME, "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if standin.dead:
                self.close_connection = True
                return
            standin.bodies.append(body)
            if len(standin.bodies) <= standin.hang_ups:
                self.close_connection = True
                return
            time.sleep(standin.delay_s)
            schema = requested_schema(body)
            text = f"hi {next(standin.numbers)}" if standin.numbered else "hi"
            self._send({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": EMBEDDED_MODEL_NAME,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant",
                                         "content": json.dumps(fill(schema, text), indent=standin.indent)}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            })

        def _send(self, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler
