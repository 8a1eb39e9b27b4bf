"""A capturing fake model: every request an adapter sends, kept exactly as sent, answered with JSON that fits the
request's schema, so that a program of several steps runs through all of them without a server.

`CapturingEngine` is prefcraft's server engine (`prefcraft.engine.routing.ServerEngine`) with the fake in place of the
server: adapters' calls reach it as DSPy's canonical Request, after `dspy.LM` has merged the LM's own kwargs into it,
and it keeps the OpenAI-style body the engine would send (messages, sampling, constraint). Each reply fills every
property of the schema in the request: a string is the property's name in angle brackets (cut to its maxLength), so
that a later step's prompt shows where an earlier reply went; a list holds one item (or minItems); an enum takes its
first value; a number its minimum.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import dspy
from dspy.lm15 import Message, Request, Response, TextPart, Usage

from prefcraft.engine.routing import ServerEngine
from prefcraft.settings import ModelSettings

SENT_AS_IS = ("model", "messages")
LITELLM_ARGUMENTS = ("num_retries", "cache")  # litellm's own, never sent


@dataclass(frozen=True)
class CapturedCall:
    request: dict[str, Any]
    """The body as the engine would send it: model, messages, sampling, constraint."""
    reply: str

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.request["messages"]

    @property
    def response_format(self) -> dict[str, Any] | None:
        return self.request.get("response_format")


class CapturingEngine(ServerEngine):
    def __init__(self) -> None:
        super().__init__(model_type="chat")
        self.calls: list[CapturedCall] = []

    def complete(self, request: Request) -> Response:
        body = {key: value for key, value in self._arguments(request).items() if key not in LITELLM_ARGUMENTS}
        call = CapturedCall(body, "")
        if call.response_format is None or "json_schema" not in call.response_format:
            raise AssertionError("the request asks for no JSON schema, so the fake cannot tell which fields to fill")
        reply = json.dumps(sample_value(call.response_format["json_schema"]["schema"], "value"), ensure_ascii=False)
        self.calls.append(CapturedCall(body, reply))
        return Response(id=None, model="capturing-fake", message=Message.assistant([TextPart(reply)]),
                        finish_reason="stop", usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0))


def capturing_lm(model: ModelSettings) -> tuple[dspy.LM, CapturingEngine]:
    """An LM with `model`'s name and the sampling `prefcraft.engine.lm.build_lm` gives it, answering through a fresh
    CapturingEngine; DSPy's cache is off, so that a repeated prompt is captured again."""
    engine = CapturingEngine()
    lm = dspy.LM(model.model, engine=engine, temperature=model.temperature, max_tokens=model.max_tokens,
                 num_retries=model.num_retries, cache=False)
    return lm, engine


def sample_value(schema: dict[str, Any], name: str) -> Any:
    """A value that `schema` accepts; `name` (the property's) becomes the text of a string."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    if "anyOf" in schema:
        return sample_value(schema["anyOf"][0], name)
    kind = schema.get("type")
    if kind == "object":
        return {key: sample_value(value, key) for key, value in schema.get("properties", {}).items()}
    if kind == "array":
        count = max(1, schema.get("minItems", 0))
        return [sample_value(schema.get("items", {"type": "string"}), name)] * min(count, schema.get("maxItems", count))
    if kind in ("integer", "number"):
        return schema.get("minimum", schema.get("exclusiveMinimum", 0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    text = f"<{name}>"
    return text[: schema["maxLength"]] if "maxLength" in schema else text


def render_calls(calls: list[CapturedCall]) -> str:
    """The calls as a snapshot reads them: each message under its role, then the schema, the sampling and the fake's
    reply."""
    blocks = []
    for number, call in enumerate(calls, 1):
        lines = [f"==================== call {number} of {len(calls)} ===================="]
        for message in call.messages:
            content = message["content"]
            lines += [f"---------- {message['role']} ----------",
                      content if isinstance(content, str) else json.dumps(content, indent=2, ensure_ascii=False)]
        lines += ["---------- response_format ----------", _pretty(call.response_format)]
        lines += ["---------- sampling ----------"]
        lines += [f"{key}: {json.dumps(call.request.get(key))}" for key in ("temperature", "max_tokens")]
        lines += [f"{key}: {_pretty(value)}" for key, value in _other_settings(call.request).items()]
        lines += ["---------- reply (written by the fake, not a model) ----------", call.reply]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _other_settings(request: dict[str, Any]) -> dict[str, Any]:
    """What else the body carries (extra_body, n, stop ...), so that a new option shows up too."""
    known = {*SENT_AS_IS, "temperature", "max_tokens", "response_format", "num_retries"}
    return {key: value for key, value in request.items() if key not in known}


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
