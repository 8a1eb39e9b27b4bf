"""A loopback HTTP proxy in front of a model server that cuts its replies short, as a server that dies or runs out of
tokens mid-reply does, until it is healed.

Modes: `pass` (forward), `length` (half of each completion's content, finish reason `length`: the reply a server
that stopped generating sends), `garbled` (half the content, finish reason `stop`: a complete reply that does not
parse), `hang_up` (the status line, the headers and half the body, then the connection closes). `cut_after` lets that
many completions through whole before cutting.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class CuttingProxy:
    def __init__(self, upstream: str, mode: str, *, cut_after: int = 0) -> None:
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.mode, self.cut_after = mode, cut_after
        self.completions = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.api_base = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def heal(self) -> None:
        self.mode = "pass"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def cutting(self) -> bool:
        """Whether this completion is cut: counts the completions seen."""
        with self.lock:
            self.completions += 1
            return self.mode != "pass" and self.completions > self.cut_after


def _halved(payload: bytes, finish_reason: str) -> bytes:
    reply = json.loads(payload)
    for choice in reply["choices"]:
        content = choice["message"]["content"] or ""
        choice["message"]["content"] = content[: len(content) // 2]
        choice["finish_reason"] = finish_reason
    return json.dumps(reply).encode()


def _handler(proxy: CuttingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with urllib.request.urlopen(proxy.upstream + self.path, timeout=30) as response:
                self._send(response.read(), len_sent=None)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = urllib.request.Request(proxy.upstream + self.path, data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                payload = response.read()
            mode = proxy.mode if proxy.cutting() else "pass"
            if mode in ("length", "garbled"):
                payload = _halved(payload, "length" if mode == "length" else "stop")
            self._send(payload, len_sent=len(payload) // 2 if mode == "hang_up" else None)

        def _send(self, payload: bytes, len_sent: int | None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[:len_sent])
            if len_sent is not None:
                self.close_connection = True

        def log_message(self, *args: object) -> None:
            pass

    return Handler
