"""A fixed fit workload replayed under each call order and engine: wall time, prompt tokens evaluated and cached.

`record`: runs one job on the embedded server with an empty DSPy cache and writes every distinct request it sent
(messages, response format, max_tokens, temperature), in the order sent, to a JSON file. Jobs: `fit` (SynthesizeMe
for one sample user, default persona prompt, n = m = `--subsets`) and `evaluate` (the default judge over the test
pairs of four sample users, both orders: one judge, many pairs). The requests are prefcraft's with
`--structured-output` (default llguidance, the compact JSON of the server prefcraft starts) and the small-model
`--profile` (`default`, today's, or a TOML file whose `[small_model]` table sets the bounds); the file records both.
`replay`: sends those requests straight to a freshly started server (no DSPy, no cache) with N concurrent clients,
each request's constraint where the server reads it (a compact dialect's in llama.cpp's `grammar`, as prefcraft's
engine sends it), under each policy:
- `recorded`: the fit's own order;
- `candidate-major`: requests grouped by prompt prefix (every message before the last: instructions, persona and
  demos), one group after the other;
- `interleaved`: one request of each group in turn;
- `warm-interleaved` (prefcraft's schedule): the first request of every group, then the rest interleaved.
Engines: `xllamacpp` (prefcraft's embedded server, with `--server-slots` slots) and, given `--llama-cpp-python PYTHON`
(an interpreter with llama-cpp-python[server] installed), `llama-cpp-python` (the former engine; it takes the schema as
`json_object` + schema).

Reported per run: wall time, requests/s, prompt tokens (from the replies), prompt tokens evaluated and served from
the cache (llama.cpp's `/metrics`), and the workload's limit: the share of prompt tokens that repeat a prefix some
earlier request already sent (order-independent: one minus the size of the token trie over the total).

`throughput`: prefcraft's own overhead. The evaluation job runs through prefcraft (`judge_pairs`, DSPy, litellm;
empty DSPy cache) at 1 thread and at `--clients` threads, recording the requests it sends; the same requests then go
straight to the server from a plain client at 1, 2, 4 and 8 concurrent clients. Every run gets a fresh server.
Reported: requests/s of each; prefcraft at `--clients` over the direct client's best; and prefcraft's overhead per
call, (prefcraft - direct) / prefcraft wall time, at one thread on each side. `--engine vllm` measures the same on
the bundled model served by vLLM (`--vllm-executable`), prefcraft sending its compact `vllm` dialect.

Run: .venv/bin/python benchmarks/replay_workload.py record [--job fit|evaluate]
         [--structured-output llguidance] [--profile default|PATH.toml]
     .venv/bin/python benchmarks/replay_workload.py replay [--job fit|evaluate] [--clients 4] [--server-slots 4]
         [--llama-cpp-python /path/to/python]
     .venv/bin/python benchmarks/replay_workload.py throughput [--clients 4] [--engine vllm]

Structured outputs before and after, in one session on one machine: before is the OpenAI json_schema form (the model
may indent its JSON) with the small-model bounds as they were before they were measured; after is llama.cpp's compact
grammar with today's profile, the default.
     .venv/bin/python benchmarks/replay_workload.py record --structured-output json_schema \\
         --profile benchmarks/profiles/bounds-2026-11-25.toml --workload /tmp/before.json
     .venv/bin/python benchmarks/replay_workload.py record --workload /tmp/after.json
     .venv/bin/python benchmarks/replay_workload.py replay --workload /tmp/before.json --engines xllamacpp \\
         --policies steps-prefcraft --output /tmp/replay_before.json
and the same replay of /tmp/after.json to /tmp/replay_after.json. Each workload's `wall_s` is the fit through
prefcraft; a replay times the same requests on a fresh server without DSPy.
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

from dspy.utils.callback import BaseCallback
from harness import DEFAULT_PROFILE, load_profile

from prefcraft.engine.adapter import DIALECTS, constraint_in_server_field

RESULTS = Path(__file__).parent / "results"
POLICIES = ("recorded", "candidate-major", "interleaved", "warm-interleaved", "steps-candidate-major",
            "steps-prefcraft")

logger = logging.getLogger("replay_workload")


class StepCounter:
    """Numbers the steps of a recorded fit: each candidate-search rung is a step, and so is each stretch of calls
    between rungs (the bootstrap, the persona). Steps ran one after the other; the calls of a step side by side."""

    def __init__(self) -> None:
        self.step = 0
        self.first_rung = False

    def around_rungs(self, score_rung: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.step, self.first_rung = self.step + 1, args[3] == 0  # `start`: the rung's first example
            try:
                return score_rung(*args, **kwargs)
            finally:
                self.step, self.first_rung = self.step + 1, False

        return counted


class RequestRecorder(BaseCallback):
    """A DSPy callback that keeps the distinct LM requests of a run, in the order they were first made, each with the
    step it belongs to."""

    def __init__(self, steps: StepCounter) -> None:
        self.requests: dict[str, dict[str, Any]] = {}
        self.steps = steps
        self.lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        kwargs = {**instance.kwargs, **inputs.get("kwargs", {})}  # the call's keyword arguments come bundled
        request = {
            "messages": inputs["messages"],
            "response_format": kwargs.get("response_format"),
            "max_tokens": kwargs.get("max_tokens"),
            "temperature": kwargs.get("temperature"),
        }
        step = {"step": self.steps.step, "first_rung": self.steps.first_rung}
        with self.lock:
            self.requests.setdefault(json.dumps(request, sort_keys=True), {**request, **step})


def record(args: argparse.Namespace) -> None:
    import dspy

    from prefcraft.backends import managed_server
    from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
    from prefcraft.engine.lm import build_adapter, build_lm
    from prefcraft.engine.usage import metered
    from prefcraft.loaders.personal_reward_bench import group_by_user, load_pairs
    from prefcraft.optimizers import candidate_search
    from prefcraft.settings import ModelSettings, ServerSettings

    users = group_by_user(load_pairs(SAMPLE_USERS))
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True, disk_cache_dir=tempfile.mkdtemp())
    steps = StepCounter()
    recorder = RequestRecorder(steps)
    candidate_search._score_rung = steps.around_rungs(candidate_search._score_rung)  # benchmark-only: tags steps
    job = fit_job if args.job == "fit" else evaluate_job
    with managed_server(ServerSettings(log_dir=Path(tempfile.mkdtemp()))) as server:
        model = ModelSettings(api_base=server.base_url, structured_output=args.structured_output, timeout_s=300)
        adapter = build_adapter(model, args.small_model)
        with dspy.context(lm=build_lm(model), adapter=adapter, callbacks=[recorder]), metered() as meter:
            started = time.perf_counter()
            described = job(users, model, args)
            wall_s = round(time.perf_counter() - started, 1)
    summary = {"job": args.job, **described, "structured_output": args.structured_output, "profile": args.profile,
               "small_model": args.small_model.model_dump(), "calls": meter.usage.calls, "wall_s": wall_s,
               "requests": list(recorder.requests.values())}
    workload = args.workload or RESULTS / f"{args.job}_workload.json"
    workload.write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    logger.info("recorded %d distinct requests (%d calls) to %s", len(summary["requests"]), summary["calls"], workload)


def throughput(args: argparse.Namespace) -> None:
    import dspy

    from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
    from prefcraft.engine.lm import build_adapter, build_lm
    from prefcraft.engine.usage import metered
    from prefcraft.loaders.personal_reward_bench import group_by_user, load_pairs
    from prefcraft.settings import EMBEDDED_MODEL_NAME, ModelSettings, SmallModelProfile

    users = group_by_user(load_pairs(SAMPLE_USERS))
    rows, requests = [], []
    dialect = "vllm" if args.engine == "vllm" else "auto"  # prefcraft's compact vLLM dialect; else as before
    for threads in sorted({1, args.clients}):
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)  # a new, empty cache
        recorder = RequestRecorder(StepCounter())
        with start_engine(args.engine, args) as server:
            model = ModelSettings(api_base=server.base_url, timeout_s=300, structured_output=dialect)
            adapter = build_adapter(model, SmallModelProfile())
            with dspy.context(lm=build_lm(model), adapter=adapter, callbacks=[recorder]), \
                    metered() as meter:
                started = time.perf_counter()
                evaluate_job(users, model, argparse.Namespace(clients=threads))
                wall_s = time.perf_counter() - started
        requests = list(recorder.requests.values())
        rows.append({"client": "prefcraft", "clients": threads, "wall_s": round(wall_s, 1),
                     "requests": meter.usage.calls, "requests_per_s": round(meter.usage.calls / wall_s, 3)})
        logger.info("%s", rows[-1])
    for clients in (1, 2, 4, 8):
        with start_engine(args.engine, args) as server:
            row = replay_once(server.base_url, args.engine, EMBEDDED_MODEL_NAME, [requests], clients)
        rows.append({"client": "direct", "clients": clients, "requests": len(requests), **row})
        logger.info("%s", rows[-1])
    prefcraft = {row["clients"]: row for row in rows if row["client"] == "prefcraft"}
    direct = [row for row in rows if row["client"] == "direct"]
    direct_one = next(row for row in direct if row["clients"] == 1)
    result = {
        "engine": args.engine, "slots": args.server_slots, "runs": rows,
        "prefcraft_over_best_direct": round(prefcraft[args.clients]["requests_per_s"]
                                            / max(row["requests_per_s"] for row in direct), 3),
        "overhead_per_call_share": round(1 - direct_one["wall_s"] / prefcraft[1]["wall_s"], 3),
    }
    output = args.output or RESULTS / ("throughput.json" if args.engine == "xllamacpp" else "throughput_vllm.json")
    output.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))


def fit_job(users: dict[str, Any], model: Any, args: argparse.Namespace) -> dict[str, Any]:
    from prefcraft.components.synthesizeme.fit import default_persona_prompt, load_persona_synthesizer
    from prefcraft.loaders.personal_reward_bench import judge_set, train_val_split
    from prefcraft.optimizers.synthesizeme import SynthesizeMe, SynthesizeMeConfig
    from prefcraft.programs.judge import PreferenceJudge

    config = SynthesizeMeConfig(num_persona_subsets=args.subsets, num_demo_candidates=args.subsets,
                                num_threads=args.clients,
                                max_demos=args.small_model.max_demos)  # the embedded model's 4k context
    synthesizer, _ = load_persona_synthesizer(default_persona_prompt(model.model))
    train, val = train_val_split(users[args.user])
    SynthesizeMe(synthesizer, config).compile(PreferenceJudge(), trainset=judge_set(train), valset=judge_set(val))
    return {"user": args.user, "subsets": args.subsets}


def evaluate_job(users: dict[str, Any], model: Any, args: argparse.Namespace) -> dict[str, Any]:
    from prefcraft.engine.evaluation import judge_pairs
    from prefcraft.programs.judge import PreferenceJudge

    chosen = sorted(users)[:4]
    pairs = [pair for user_id in chosen for pair in users[user_id].test]
    judge_pairs(PreferenceJudge(), pairs, model=model, num_threads=args.clients, progress=False)
    return {"users": chosen, "pairs": len(pairs)}


def prefix_key(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"][:-1], sort_keys=True)


def ordered(requests: list[dict[str, Any]], policy: str) -> list[list[dict[str, Any]]]:
    """The requests as phases run one after the other, each in the policy's order.

    The flat policies ignore the fit's steps (an upper bound on what any order of these requests can do); the `steps-`
    policies keep them, as a fit must: `steps-candidate-major` orders each step as prefcraft did before (candidate
    after candidate), `steps-prefcraft` as it does now (`prefcraft.engine.scheduling`).
    """
    from prefcraft.engine.scheduling import interleave, warm_then_interleave

    if policy.startswith("steps-"):
        steps: dict[int, list[dict[str, Any]]] = {}
        for request in requests:
            steps.setdefault(request["step"], []).append(request)
        return [phase for step in steps.values() for phase in ordered_step(step, policy)]
    groups = list(prefix_groups(requests).values())
    if policy == "recorded":
        return [requests]
    if policy == "candidate-major":
        return [[request for group in groups for request in group]]
    if policy == "interleaved":
        return [interleave(groups)]
    return warm_then_interleave(groups)


def ordered_step(step: list[dict[str, Any]], policy: str) -> list[list[dict[str, Any]]]:
    from prefcraft.engine.scheduling import interleave, warm_then_interleave

    groups = list(prefix_groups(step).values())
    if policy == "steps-candidate-major":
        return [[request for group in groups for request in group]]
    rung_after_the_first = step[0]["step"] % 2 == 1 and not step[0]["first_rung"]
    return [interleave(groups)] if rung_after_the_first else warm_then_interleave(groups)


def prefix_groups(requests: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for request in requests:
        groups.setdefault(prefix_key(request), []).append(request)
    return groups


def post(base_url: str, path: str, body: dict[str, Any], timeout_s: float = 600) -> dict[str, Any]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(base_url + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.load(response)


def chat_body(request: dict[str, Any], model: str, engine: str) -> dict[str, Any]:
    """The HTTP body of a recorded request, its constraint where the engine reads it: llama-cpp-python takes any schema
    as `json_object` + schema; llama.cpp takes a compact dialect's in its own field, as prefcraft's engine sends it."""
    body = {"model": model, "messages": request["messages"], "max_tokens": request["max_tokens"],
            "temperature": request["temperature"]}
    response_format = request["response_format"]
    if response_format and engine == "llama-cpp-python" and response_format.get("type") == "json_schema":
        response_format = {"type": "json_object", "schema": response_format["json_schema"]["schema"]}
    if response_format:
        body["response_format"] = response_format
    constraint_in_server_field(body)
    body.update(body.pop("extra_body", {}))  # litellm sends its extra_body fields at the body's top level
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
    from prefcraft.backends.counters import read_prompt_cache

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
    from prefcraft.backends.bundled import bundled_model_path
    from prefcraft.settings import EMBEDDED_MODEL_NAME, ServerSettings

    log_dir = Path(tempfile.mkdtemp())
    if engine == "xllamacpp":
        return managed_server(ServerSettings(log_dir=log_dir, slots=args.server_slots,
                                             cache_ram_mib=args.server_cache_ram_mib,
                                             n_threads=2))
    if engine == "vllm":
        return managed_server(ServerSettings(backend="vllm", executable=args.vllm_executable, log_dir=log_dir))
    port = free_port()
    command = [args.llama_cpp_python, "-m", "llama_cpp.server", "--model", str(bundled_model_path()),
               "--model_alias", EMBEDDED_MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", "4096", "--n_threads", "2"]
    return ManagedServer(command, host="127.0.0.1", port=port, served_model_name=EMBEDDED_MODEL_NAME,
                         log_path=log_dir / "llama-cpp-python.log", startup_timeout_s=120)


def replay(args: argparse.Namespace) -> None:
    from prefcraft.settings import EMBEDDED_MODEL_NAME

    workload = json.loads((args.workload or RESULTS / f"{args.job}_workload.json").read_text(encoding="utf-8"))
    requests = workload["requests"][: args.max_requests]
    engines = [engine for engine in args.engines if engine == "xllamacpp" or args.llama_cpp_python]
    rows = []
    limit = None
    for engine in engines:
        for policy in args.policies:
            with start_engine(engine, args) as server:
                if limit is None and engine == "xllamacpp":  # llama-cpp-python has no /tokenize
                    total, share = sharing_limit(server.base_url.removesuffix("/v1"), requests)
                    limit = {"prompt_tokens": total, "shared_prefix_share": round(share, 3)}
                    logger.info("workload: %d requests, %s", len(requests), limit)
                phases = ordered(requests, policy)
                row = {"engine": engine, "policy": policy, "clients": args.clients,
                       **replay_once(server.base_url, engine, EMBEDDED_MODEL_NAME, phases, args.clients)}
            rows.append(row)
            logger.info("%s", row)
    result = {"workload": {k: v for k, v in workload.items() if k != "requests"}, "requests": len(requests),
              "limit": limit, "slots": args.server_slots, "cache_ram_mib": args.server_cache_ram_mib, "runs": rows}
    output = args.output or RESULTS / f"replay_{args.job}_{'_'.join(engines)}.json"
    output.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["record", "replay", "throughput"])
    parser.add_argument("--job", choices=["fit", "evaluate"], default="fit")
    parser.add_argument("--workload", type=Path, help="default: benchmarks/results/<job>_workload.json")
    parser.add_argument("--user", default="sample_user_01")
    parser.add_argument("--subsets", type=int, default=10, help="record: n = m, candidates per search")
    parser.add_argument("--structured-output", choices=DIALECTS, default="llguidance",
                        help="record: the structured-output dialect prefcraft sends (default: %(default)s)")
    parser.add_argument("--profile", default=DEFAULT_PROFILE,
                        help="record: the small-model profile, default (today's) or a TOML file with a [small_model] "
                        "table (default: %(default)s)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (the fit's threads)")
    parser.add_argument("--server-slots", "--slots", type=int, default=4, help="xllamacpp parallel slots")
    parser.add_argument("--server-cache-ram-mib", "--cache-ram-mib", type=int, default=256,
                        help="xllamacpp host-memory prompt cache")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--max-requests", type=int, help="replay only the first N recorded requests")
    parser.add_argument("--engines", nargs="+", default=["xllamacpp", "llama-cpp-python"],
                        choices=["xllamacpp", "llama-cpp-python"])
    parser.add_argument("--llama-cpp-python", help="a Python interpreter with llama-cpp-python[server] installed")
    parser.add_argument("--engine", choices=["xllamacpp", "vllm"], default="xllamacpp",
                        help="throughput: the server measured (default: %(default)s)")
    parser.add_argument("--vllm-executable", default=".venv-vllm/bin/vllm",
                        help="with --engine vllm: the vllm executable (default: %(default)s)")
    parser.add_argument("--output", type=Path, help="default: benchmarks/results/replay_<job>_<engines>.json")
    args = parser.parse_args()
    try:
        args.small_model = load_profile(args.profile)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    {"record": record, "replay": replay, "throughput": throughput}[args.mode](args)


if __name__ == "__main__":
    main()
