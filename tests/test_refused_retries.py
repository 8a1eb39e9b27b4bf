"""A call the server refuses for now (429 rate limit, 5xx server error) is sent again after a wait, as the openai client
of the reference codes does; any other refusal (a 400: a prompt over the context length) is sent once."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dspy
import pytest
from openai_standin import fill, requested_schema

import prefcraft.engine.lm
from prefcraft.engine.lm import RETRY_FIRST_WAIT_S, build_adapter, build_lm
from prefcraft.engine.usage import metered
from prefcraft.settings import EMBEDDED_MODEL_NAME, ModelSettings


class RefusingServer(ThreadingHTTPServer):
    """Answers the chat requests with `statuses` in turn (a 429 with `Retry-After: 1`), then with 200 and JSON that
    fits the request's schema; counts the requests."""

    def __init__(self, statuses: list[int], always: int | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.statuses = statuses
        self.always = always
        self.requests = 0
        self.api_base = f"http://127.0.0.1:{self.server_port}/v1"
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def status(self) -> int:
        self.requests += 1
        if self.always is not None:
            return self.always
        return self.statuses[self.requests - 1] if self.requests <= len(self.statuses) else 200


class _Handler(BaseHTTPRequestHandler):
    server: RefusingServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status = self.server.status()
        if status == 200:
            answer = {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": EMBEDDED_MODEL_NAME,
                      "choices": [{"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant",
                                               "content": json.dumps(fill(requested_schema(body)))}}],
                      "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
        else:
            answer = {"error": {"message": f"refused with {status}", "type": "error", "code": status}}
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if status == 429:
            self.send_header("Retry-After", "1")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The waits between attempts, recorded instead of slept."""
    waited: list[float] = []
    monkeypatch.setattr(prefcraft.engine.lm.time, "sleep", waited.append)
    return waited


@pytest.fixture
def refusing() -> Iterator[type[RefusingServer]]:
    servers: list[RefusingServer] = []

    def start(statuses: list[int] | None = None, always: int | None = None) -> RefusingServer:
        servers.append(RefusingServer(statuses or [], always))
        return servers[-1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def ask(server: RefusingServer, retries: int = 2):
    model = ModelSettings(api_base=server.api_base, num_retries=retries)
    with dspy.context(lm=build_lm(model), adapter=build_adapter(model)), metered() as meter:
        answer = dspy.Predict("question -> answer")(question="q")
    return answer, meter.usage


@pytest.mark.parametrize(("status", "wait_s"), [(429, 1.0), (500, RETRY_FIRST_WAIT_S), (502, RETRY_FIRST_WAIT_S),
                                                 (503, RETRY_FIRST_WAIT_S)])
def test_a_call_refused_for_now_is_sent_again_after_a_wait(refusing, waits, status, wait_s):
    """A 429's Retry-After is honoured; a server error waits the first backoff."""
    server = refusing([status])
    answer, usage = ask(server)
    assert answer.answer
    assert server.requests == 2
    assert (usage.requests, usage.retries, usage.calls) == (1, 1, 1)
    assert waits == [wait_s]


def test_the_backoff_doubles_and_the_retries_run_out(refusing, waits):
    server = refusing(always=500)
    with pytest.raises(dspy.LMError):
        ask(server, retries=3)
    assert server.requests == 4
    assert waits == [RETRY_FIRST_WAIT_S, 2 * RETRY_FIRST_WAIT_S, 4 * RETRY_FIRST_WAIT_S]


def test_a_bad_request_is_sent_once(refusing, waits):
    server = refusing(always=400)
    with metered() as meter, pytest.raises(dspy.LMError):
        ask(server)
    assert server.requests == 1
    assert (meter.usage.requests, meter.usage.retries) == (1, 0)
    assert waits == []
