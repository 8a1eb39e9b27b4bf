"""A fixed fit workload replayed under each call order and engine: wall time, prompt tokens evaluated and cached.

`record`: fits one sample user with SynthesizeMe on the embedded server (shipped persona prompt, empty DSPy cache)
and writes every distinct request the fit sent (messages, response format, max_tokens, temperature), in the order
sent, to a JSON file.
`replay`: sends those requests straight to a freshly started server (no DSPy, no cache) with N concurrent clients,
under each policy:
- `recorded`: the fit's own order;
- `candidate-major`: requests grouped by prompt prefix (every message before the last: instructions, persona and
  demos), one group after the other;
- `interleaved`: one request of each group in turn;
- `warm-interleaved` (prefcraft's schedule): the first request of every group, then the rest interleaved.
Engines: `xllamacpp` (prefcraft's embedded server, with `--slots` slots) and, given `--llama-cpp-python PYTHON` (an
interpreter with llama-cpp-python[server] installed), `llama-cpp-python` (the former engine; it takes the schema as
`json_object` + schema).

Reported per run: wall time, requests/s, prompt tokens (from the replies), prompt tokens evaluated and served from
the cache (llama.cpp's `/metrics`), and the workload's limit: the share of prompt tokens that repeat a prefix some
earlier request already sent (order-independent: one minus the size of the token trie over the total).

Run: .venv/bin/python benchmarks/replay_workload.py record
     .venv/bin/python benchmarks/replay_workload.py replay [--clients 4] [--llama-cpp-python /path/to/python]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
WORKLOAD = RESULTS / "fit_workload.json"
POLICIES = ("recorded", "candidate-major", "interleaved", "warm-interleaved")

logger = logging.getLogger("replay_workload")


class RequestRecorder:
    """A DSPy callback that keeps the distinct LM requests of a run, in the order they were first made."""

    def __init__(self) -> None:
        self.requests: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        kwargs = {**instance.kwargs, **{k: v for k, v in inputs.items() if k not in ("prompt", "messages")}}
        request = {
            "messages": inputs["messages"],
            "response_format": kwargs.get("extra_body", {}).get("response_format"),
            "max_tokens": kwargs.get("max_tokens"),
            "temperature": kwargs.get("temperature"),
        }
        with self.lock:
            self.requests.setdefault(json.dumps(request, sort_keys=True), request)

    def __getattr__(self, name: str) -> Any:  # every other callback hook does nothing
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)


def record(args: argparse.Namespace) -> None:
    import dspy
    from prefcraft.optimizers.synthesizeme import SynthesizeMe, SynthesizeMeConfig

    from prefcraft.backends import managed_server
    from prefcraft.commands.fit import default_persona_prompt, load_persona_synthesizer
    from prefcraft.data import SAMPLE_USERS
    from prefcraft.lm import build_adapter, build_lm
    from prefcraft.loaders.personal_reward_bench import group_by_user, load_pairs
    from prefcraft.settings import ModelSettings, ServerSettings

    user = group_by_user(load_pairs(SAMPLE_USERS))[args.user]
    config = SynthesizeMeConfig(num_persona_subsets=args.subsets, num_demo_candidates=args.subsets,
                                num_threads=args.clients)
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=tempfile.mkdtemp())
    recorder = RequestRecorder()
    with managed_server(ServerSettings(log_dir=Path(tempfile.mkdtemp()))) as server:
        model = ModelSettings(api_base=server.base_url, timeout_s=300)
        synthesizer, _ = load_persona_synthesizer(default_persona_prompt(model.model))
        with dspy.context(lm=build_lm(model), adapter=build_adapter(model), callbacks=[recorder]):
            started = time.perf_counter()
            _, fit = SynthesizeMe(synthesizer, config).fit(user)
    summary = {"user": args.user, "subsets": args.subsets, "fit_calls": fit.total_usage.calls,
               "fit_wall_s": round(time.perf_counter() - started, 1), "requests": list(recorder.requests.values())}
    args.workload.write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    logger.info("recorded %d distinct requests (%d fit calls) to %s", len(summary["requests"]), fit.total_usage.calls,
                args.workload)


def prefix_key(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"][:-1], sort_keys=True)


def ordered(requests: list[dict[str, Any]], policy: str) -> list[list[dict[str, Any]]]:
    """The requests as phases run one after the other, each in the policy's order."""
    from prefcraft.scheduling import interleave, warm_then_interleave

    groups: dict[str, list[dict[str, Any]]] = {}
    for request in requests:
        groups.setdefault(prefix_key(request), []).append(request)
    if policy == "recorded":
        return [requests]
    if policy == "candidate-major":
        return [[request for group in groups.values() for request in group]]
    if policy == "interleaved":
        return [interleave(list(groups.values()))]
    return warm_then_interleave(list(groups.values()))


def post(base_url: str, path: str, body: dict[str, Any], timeout_s: float = 600) -> dict[str, Any]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(base_url + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.load(response)


def chat_body(request: dict[str, Any], model: str, engine: str) -> dict[str, Any]:
    body = {"model": model, "messages": request["messages"], "max_tokens": request["max_tokens"],
            "temperature": request["temperature"]}
    response_format = request["response_format"]
    if response_format and engine == "llama-cpp-python" and response_format.get("type") == "json_schema":
        response_format = {"type": "json_object", "schema": response_format["json_schema"]["schema"]}
    if response_format:
        body["response_format"] = response_format
    return body


def sharing_limit(base_url: str, requests: list[dict[str, Any]]) -> tuple[int, float]:
    """Total prompt tokens, and the share of them that repeat a prefix of an earlier request (via a token trie)."""
    root: dict[int, dict] = {}
    total = nodes = 0
    for request in requests:
        prompt = post(base_url, "/apply-template", {"messages": request["messages"]})["prompt"]
        tokens = post(base_url, "/tokenize", {"content": prompt, "add_special": True})["tokens"]
        total += len(tokens)
        node = root
        for token in tokens:
            if token not in node:
                node[token] = {}
                nodes += 1
            node = node[token]
    return total, 1 - nodes / total if total else 0.0


def replay_once(base_url: str, engine: str, model: str, phases: list[list[dict[str, Any]]], clients: int) -> dict:
    from prefcraft.backends.metrics import read_prompt_cache

    before = read_prompt_cache(base_url)
    prompt_tokens = failures = 0
    started = time.perf_counter()
    for phase in phases:
        with ThreadPoolExecutor(max_workers=clients) as pool:
            futures = [pool.submit(post, base_url, "/chat/completions", chat_body(r, model, engine)) for r in phase]
            for future in futures:
                try:
                    prompt_tokens += future.result()["usage"]["prompt_tokens"]
                except Exception as error:  # a failed request is counted, the replay goes on
                    failures += 1
                    logger.warning("request failed: %s", error)
    wall_s = time.perf_counter() - started
    after = read_prompt_cache(base_url)
    row = {"wall_s": round(wall_s, 1), "requests_per_s": round(sum(map(len, phases)) / wall_s, 3),
           "prompt_tokens": prompt_tokens, "failures": failures}
    if before is not None and after is not None:
        cache = after - before
        row.update(evaluated=cache.evaluated, cached=cache.cached, cached_share=round(cache.share, 3))
    return row


def start_engine(engine: str, args: argparse.Namespace):
    from prefcraft.backends import ManagedServer, free_port, managed_server
    from prefcraft.backends.llamacpp import bundled_model_path
    from prefcraft.settings import EMBEDDED_MODEL_NAME, ServerSettings

    log_dir = Path(tempfile.mkdtemp())
    if engine == "xllamacpp":
        return managed_server(ServerSettings(log_dir=log_dir, slots=args.slots, n_threads=2))
    port = free_port()
    command = [args.llama_cpp_python, "-m", "llama_cpp.server", "--model", str(bundled_model_path()),
               "--model_alias", EMBEDDED_MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", "4096", "--n_threads", "2"]
    return ManagedServer(command, host="127.0.0.1", port=port, served_model_name=EMBEDDED_MODEL_NAME,
                         log_path=log_dir / "llama-cpp-python.log", startup_timeout_s=120)


def replay(args: argparse.Namespace) -> None:
    from prefcraft.settings import EMBEDDED_MODEL_NAME

    workload = json.loads(args.workload.read_text(encoding="utf-8"))
    requests = workload["requests"][: args.max_requests]
    engines = ["xllamacpp", *(["llama-cpp-python"] if args.llama_cpp_python else [])]
    rows = []
    limit = None
    for engine in engines:
        for policy in args.policies:
            with start_engine(engine, args) as server:
                if limit is None:
                    total, share = sharing_limit(server.base_url.removesuffix("/v1"), requests)
                    limit = {"prompt_tokens": total, "shared_prefix_share": round(share, 3)}
                    logger.info("workload: %d requests, %s", len(requests), limit)
                phases = ordered(requests, policy)
                row = {"engine": engine, "policy": policy, "clients": args.clients,
                       **replay_once(server.base_url, engine, EMBEDDED_MODEL_NAME, phases, args.clients)}
            rows.append(row)
            logger.info("%s", row)
    result = {"workload": {k: v for k, v in workload.items() if k != "requests"}, "requests": len(requests),
              "limit": limit, "slots": args.slots, "runs": rows}
    output = RESULTS / "replay_workload.json"
    output.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["record", "replay"])
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--user", default="sample_user_01")
    parser.add_argument("--subsets", type=int, default=10, help="record: n = m, candidates per search")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (the fit's threads)")
    parser.add_argument("--slots", type=int, default=4, help="xllamacpp parallel slots")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--max-requests", type=int, help="replay only the first N recorded requests")
    parser.add_argument("--llama-cpp-python", help="a Python interpreter with llama-cpp-python[server] installed")
    args = parser.parse_args()
    record(args) if args.mode == "record" else replay(args)


if __name__ == "__main__":
    main()
