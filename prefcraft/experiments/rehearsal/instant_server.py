"""An OpenAI-compatible server on loopback that answers every chat request at once with JSON valid for the request's
schema, and injects the faults a real server shows (a prompt over the context, an HTTP 500, a reply cut at
max_tokens), so that an experiment can be rehearsed end to end without a model.

Replies are deterministic per request body: the same body gets the same reply; different bodies get different strings
(each carries a short hash of the body). Token counts are approximate (`approximate_tokens`), not a tokenizer's.

Run on its own: `python -m prefcraft.experiments.rehearsal.instant_server [--port P] [--context-tokens N]
[--error-rate R] [--cut-rate R] [--delay-s S] [--request-log FILE]`; it prints its base URL on its first line and serves
until SIGTERM or Ctrl-C. `GET /stats` answers its counts per model name (`ModelStats`); the request log has a line per
request (`<model> <body hash> <status>`), appended as it is answered, so that it outlives a killed server.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CONTEXT_LENGTH = "context_length"
SERVER_ERROR = "server_error"
CUT = "cut"
UNKNOWN_MODEL = "unknown_model"
HASH_CHARS = 10  # of a reply's text: enough that no two bodies of a run share it
SHUTDOWN_POLL_S = 0.02  # how soon `close` is seen (the standard library's 0.5 s made every close slow)
EXTRA_ITEMS = 2  # a varied reply's lists and maps hold up to this many more entries than their minimum


def approximate_tokens(text: str) -> int:
    """About how many tokens `text` is: ceil(UTF-8 bytes / 4), no tokenizer's count."""
    return -(-len(text.encode("utf-8")) // 4)


# ---- the reply's JSON ----

def requested_schema(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema a request constrains its reply to, in whichever server's field it came (the OpenAI
    response_format, llama.cpp's llguidance grammar, vLLM's structured_outputs); an open object without one."""
    if "grammar" in body:
        return json.loads(body["grammar"].split("%json ", 1)[1])
    if "structured_outputs" in body:
        return body["structured_outputs"]["json"]
    return body.get("response_format", {}).get("json_schema", {}).get("schema", {"type": "object"})


def fill(schema: dict[str, Any], text: str = "hi", rng: random.Random | None = None) -> Any:
    """A value that `schema` accepts, with `text` for its strings (cut or repeated to their length bounds). Without
    `rng`, the simplest: an enum's or anyOf's first option, the lowest number, lists and maps at their minimum size;
    with it, options and sizes drawn from `rng`."""
    return _Filler(schema, text, rng).value(schema)


class _Filler:
    def __init__(self, root: dict[str, Any], text: str, rng: random.Random | None) -> None:
        self.root = root
        self.text = text
        self.rng = rng

    def value(self, schema: dict[str, Any], text: str | None = None) -> Any:
        text = self.text if text is None else text
        if "$ref" in schema:
            return self.value(self._resolve(schema["$ref"]), text)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self._choose(schema["enum"])
        options = schema.get("anyOf") or schema.get("oneOf")
        if options:
            return self.value(self._choose(options), text)
        kind = schema.get("type", "object" if "properties" in schema else "string")
        if isinstance(kind, list):
            kind = self._choose(kind)
        if kind == "object":
            return self._object(schema, text)
        if kind == "array":
            return self._array(schema, text)
        if kind in ("integer", "number"):
            return _lowest_number(schema, kind)
        if kind == "boolean":
            return self._choose([True, False])
        if kind == "null":
            return None
        return _fit_length(text, schema)

    def _object(self, schema: dict[str, Any], text: str) -> dict[str, Any]:
        named = {name: self.value(value, text) for name, value in schema.get("properties", {}).items()}
        entries = [*schema.get("patternProperties", {}).values()]
        if isinstance(schema.get("additionalProperties"), dict) and not named:
            entries.append(schema["additionalProperties"])
        if not entries:
            return named
        low = schema.get("minProperties", 0)
        count = self._count(low, schema.get("maxProperties", math.inf))
        # Keys "k1", "k2", ... fit the key patterns prefcraft.engine.adapter gives maps (printable, bounded length).
        return named | {f"k{index}": self.value(entries[0], text) for index in range(1, count + 1)}

    def _array(self, schema: dict[str, Any], text: str) -> list[Any]:
        count = self._count(schema.get("minItems", 0), schema.get("maxItems", math.inf))
        items = schema.get("items", {})
        # Items after the first differ from it, so that uniqueItems holds.
        return [self.value(items, text if index == 0 else f"{text}-{index}") for index in range(count)]

    def _count(self, low: int, high: float) -> int:
        return low if self.rng is None else self.rng.randint(low, int(min(high, low + EXTRA_ITEMS)))

    def _choose(self, options: Sequence[Any]) -> Any:
        return options[0] if self.rng is None else self.rng.choice(options)

    def _resolve(self, reference: str) -> dict[str, Any]:
        """A local reference ("#/$defs/Name") into the root schema."""
        node: Any = self.root
        for part in reference.removeprefix("#").strip("/").split("/"):
            if part:
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node


def _lowest_number(schema: dict[str, Any], kind: str) -> int | float:
    """The lowest value of the range (0 where it allows it and sets no lower bound), on the step of multipleOf."""
    step = schema.get("multipleOf", 1 if kind == "integer" else None)
    high = schema.get("maximum", schema.get("exclusiveMaximum", math.inf))
    if "minimum" in schema:
        low, open_below = schema["minimum"], False
    elif "exclusiveMinimum" in schema:
        low, open_below = schema["exclusiveMinimum"], True
    else:
        low, open_below = min(0, high - (step or 1)), False
    if step:
        multiples = math.floor(low / step) + 1 if open_below else math.ceil(low / step)
        value = multiples * step
        return int(value) if kind == "integer" else round(value, 12)
    return low + min(1, (high - low) / 2) if open_below else low


def _fit_length(text: str, schema: dict[str, Any]) -> str:
    shortest = schema.get("minLength", 0)
    unit = text or "x"
    padded = unit * -(-shortest // len(unit)) if len(text) < shortest else text
    return padded[: schema.get("maxLength", len(padded))]


# ---- the faults ----

@dataclass(frozen=True)
class Faults:
    """What the server does wrong, each decided per request body (the same body always meets the same fault)."""

    context_tokens: int | None = None  # a prompt and max_tokens over this many tokens get vLLM's HTTP 400
    error_rate: float = 0.0  # share of requests answered HTTP 500
    cut_rate: float = 0.0  # share of replies cut at max_tokens: finish_reason "length", JSON truncated
    delay_s: float = 0.0  # every reply held back this long
    seed: int = 0


@dataclass
class ModelStats:
    """What one served model name was asked: requests, approximate tokens, and the faults met, by kind."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    longest_prompt_tokens: int = 0
    faults: dict[str, int] = field(default_factory=dict)


def _draws(raw: bytes, seed: int) -> tuple[str, float, float, random.Random]:
    """The request's hash for its text, its draws against the error and cut rates, and the generator of its reply's
    choices: all from its body alone, so a repeated request meets the same fate."""
    digest = hashlib.blake2b(raw, key=seed.to_bytes(8, "little", signed=True), digest_size=24).digest()
    error_draw = int.from_bytes(digest[:8], "little") / 2**64
    cut_draw = int.from_bytes(digest[8:16], "little") / 2**64
    return digest.hex()[:HASH_CHARS], error_draw, cut_draw, random.Random(digest[16:])


def body_hash(raw: bytes) -> str:
    """A request body's fingerprint in the request log: the same body, the same call."""
    return hashlib.blake2b(raw, digest_size=12).hexdigest()


def _error(status: int, kind: str, message: str) -> tuple[int, dict[str, Any]]:
    """An error body in OpenAI's shape, as vLLM's server writes it (vLLM 0.32's `ErrorResponse`)."""
    return status, {"error": {"message": message, "type": kind, "param": None, "code": status}}


def _content_text(messages: list[dict[str, Any]]) -> str:
    """All messages' text, whether each content is a string or a list of parts."""
    texts = []
    for message in messages:
        content = message.get("content") or ""
        texts += [content] if isinstance(content, str) else [part.get("text", "") for part in content]
    return "".join(texts)


# ---- the server ----

class InstantServer:
    """The instant server on 127.0.0.1 (a free port unless `port`), serving from threads of this process until
    closed. `models`: the names it lists and answers for (any name, if none)."""

    def __init__(self, faults: Faults = Faults(), models: Sequence[str] = (), port: int = 0,
                 request_log: Path | None = None) -> None:
        self.faults = faults
        self.models = tuple(models)
        self._stats: dict[str, ModelStats] = {}
        self._lock = threading.Lock()
        self._log = request_log.open("a", encoding="utf-8", buffering=1) if request_log else None
        self._http = _Http(("127.0.0.1", port), self)
        self.base_url = f"http://127.0.0.1:{self._http.server_port}/v1"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(SHUTDOWN_POLL_S,),
                                        name="instant-server", daemon=True)
        self._thread.start()

    def stats(self) -> dict[str, ModelStats]:
        """A copy of the counts so far, per model name requested."""
        with self._lock:
            return {name: replace(counts, faults=dict(counts.faults)) for name, counts in self._stats.items()}

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()
        if self._log:
            self._log.close()

    def __enter__(self) -> InstantServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def answer(self, raw: bytes) -> tuple[int, dict[str, Any]]:
        """The status and JSON body of the reply to one chat request's raw body."""
        body = json.loads(raw)
        prompt_tokens = approximate_tokens(_content_text(body.get("messages", [])))
        status, reply, fault = self._reply(raw, body, prompt_tokens)
        with self._lock:
            counts = self._stats.setdefault(body.get("model", ""), ModelStats())
            counts.requests += 1
            counts.prompt_tokens += prompt_tokens
            counts.completion_tokens += reply["usage"]["completion_tokens"] if status == 200 else 0
            counts.longest_prompt_tokens = max(counts.longest_prompt_tokens, prompt_tokens)
            if fault:
                counts.faults[fault] = counts.faults.get(fault, 0) + 1
            if self._log:
                self._log.write(f"{body.get('model', '')} {body_hash(raw)} {status}\n")
        return status, reply

    def _reply(self, raw: bytes, body: dict[str, Any], prompt_tokens: int) -> tuple[int, dict[str, Any], str | None]:
        """The status, the JSON body and the fault met (None if none)."""
        model = body.get("model", "")
        if self.models and model not in self.models:
            return *_error(404, "NotFoundError", f"The model `{model}` does not exist."), UNKNOWN_MODEL
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        limit = self.faults.context_tokens
        if limit is not None and prompt_tokens + max_tokens > limit:
            message = (f"This model's maximum context length is {limit} tokens. However, you requested "
                       f"{prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, {max_tokens} in the "
                       "completion). Please reduce the length of the messages or completion.")
            return *_error(400, "BadRequestError", message), CONTEXT_LENGTH
        text, error_draw, cut_draw, rng = _draws(raw, self.faults.seed)
        if error_draw < self.faults.error_rate:
            injected = "Internal server error (injected by the instant server)"
            return *_error(500, "InternalServerError", injected), SERVER_ERROR
        content = json.dumps(fill(requested_schema(body), text, rng), ensure_ascii=False)
        cut = cut_draw < self.faults.cut_rate
        if cut:
            content = content[: len(content) // 2]  # a strict prefix of a JSON object never parses
        completion_tokens = (max_tokens or approximate_tokens(content)) if cut else approximate_tokens(content)
        return 200, {
            "id": f"chatcmpl-{text}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "length" if cut else "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }, CUT if cut else None


class _Http(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # a run's many client threads connect at once

    def __init__(self, address: tuple[str, int], instant: InstantServer) -> None:
        super().__init__(address, _Handler)
        self.instant = instant


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart
    server: _Http

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/health":
            self._send(200, {})
        elif self.path.rstrip("/") == "/stats":
            self._send(200, {name: asdict(counts) for name, counts in self.server.instant.stats().items()})
        elif self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list",
                             "data": [{"id": name, "object": "model"} for name in self.server.instant.models]})
        else:
            self._send(*_error(404, "NotFoundError", f"no route {self.path}"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(*_error(404, "NotFoundError", f"no route {self.path}"))
            return
        instant = self.server.instant
        time.sleep(instant.faults.delay_s)
        try:
            self._send(*instant.answer(raw))
        except ValueError as error:  # a body that is no JSON, as vLLM answers it
            self._send(*_error(400, "BadRequestError", f"the request body is not JSON: {error}"))

    def _send(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m prefcraft.experiments.rehearsal.instant_server",
                                     description="An instant OpenAI-compatible server on loopback, for rehearsals.")
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--model", action="append", default=[], help="a model name to serve (repeat; default: any)")
    parser.add_argument("--context-tokens", type=int, help="answer a longer request with vLLM's context-length error")
    parser.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered HTTP 500")
    parser.add_argument("--cut-rate", type=float, default=0.0, help="share of replies cut at max_tokens")
    parser.add_argument("--delay-s", type=float, default=0.0, help="hold every reply back this long")
    parser.add_argument("--seed", type=int, default=0, help="changes which requests meet a fault, and every reply")
    parser.add_argument("--request-log", type=Path, help="append a line per request: model, body hash, status")
    args = parser.parse_args(argv)
    faults = Faults(context_tokens=args.context_tokens, error_rate=args.error_rate, cut_rate=args.cut_rate,
                    delay_s=args.delay_s, seed=args.seed)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with InstantServer(faults, args.model, port=args.port, request_log=args.request_log) as server:
        print(server.base_url, flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
