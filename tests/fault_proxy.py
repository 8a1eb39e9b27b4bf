"""A loopback HTTP proxy in front of a real model server that fails on purpose: it dies, answers slowly, or corrupts.

Modes: `pass` (forward), `dead` (close every connection unanswered, as a killed server does), `slow` (wait
`delay_s` before forwarding a chat completion), `truncate` (cut each completion's content in half: unparseable).
`die_after` switches to `dead` once that many chat completions have been answered. Keeps the requests it answered.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultProxy:
    def __init__(self, upstream: str, mode: str = "pass", *, die_after: int | None = None, delay_s: float = 0.0):
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.mode, self.die_after, self.delay_s = mode, die_after, delay_s
        self.answered: list[bytes] = []  # bodies of the chat completions answered with the upstream's reply
        self.cut_short: list[bytes] = []  # those whose reply the model ended at max_tokens (never cached: asked again)
        self.lock = threading.Lock()
        self.server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def heal(self) -> None:
        self.mode, self.die_after = "pass", None

    def reply(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes] | None:
        """The upstream's answer, altered by the mode; None: hang up without answering."""
        completion = path.endswith("/chat/completions")
        if self.mode == "dead":
            return None
        if completion and self.mode == "slow":
            time.sleep(self.delay_s)
        request = urllib.request.Request(self.upstream + path, data=body, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                status, payload = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, payload = error.code, error.read()
        if completion and status == 200:
            if self.mode == "truncate":
                payload = _truncated(payload)
            with self.lock:
                self.answered.append(body or b"")
                if _ended_at_max_tokens(payload):
                    self.cut_short.append(body or b"")
                if self.die_after is not None and len(self.answered) >= self.die_after:
                    self.mode = "dead"
        return status, payload


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client hanging up on a stalled reply is part of the test, not news


def _ended_at_max_tokens(payload: bytes) -> bool:
    return any(choice.get("finish_reason") == "length" for choice in json.loads(payload).get("choices", []))


def _truncated(payload: bytes) -> bytes:
    reply = json.loads(payload)
    for choice in reply["choices"]:
        content = choice["message"]["content"] or ""
        choice["message"]["content"] = content[: len(content) // 2]
    return json.dumps(reply).encode()


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _relay(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            answer = proxy.reply(method, self.path, self.rfile.read(length) if length else None)
            if answer is None:
                self.close_connection = True
                return
            status, payload = answer
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            self._relay("GET")

        def do_POST(self) -> None:
            self._relay("POST")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def fault_proxy(upstream: str, mode: str = "pass", **options: object) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream, mode, **options)
    thread = threading.Thread(target=proxy.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.server.shutdown()
        proxy.server.server_close()
