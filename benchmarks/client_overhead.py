"""prefcraft's own cost per LM call against a plain HTTP client, on a server that answers at once.

An instant OpenAI-compatible server (its own process, loopback only) answers each chat request with the simplest JSON
its schema accepts (tests/openai_standin.py's `fill`: the same request, the same answer). Against it, for each thread
count:
- prefcraft: `prefcraft synthesizeme evaluate --methods baseline` in its own process, over `--copies` copies of the
  bundled sample users (each copy's conversations marked with its number, so that no two requests are alike and the
  DSPy cache starts empty), with its own MLflow store and cache in a scratch folder;
- plain: the request bodies prefcraft sent, sent again by httpx from the same number of threads.

Reported per thread count: requests/s while calling (first to last request the server saw), CPU ms per call over that
window (prefcraft: its process's user + system time; plain: this process's), their ratio, prefcraft's peak RSS, the
MLflow store's size and the DSPy cache's size on disk. `--memory-copies` runs prefcraft once more at the largest
thread count with more copies: peak RSS at two sizes.

Run: .venv/bin/python benchmarks/client_overhead.py [--copies 20] [--threads 1 8 32] [--memory-copies 200]
     [--prefcraft-args='--trace']
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness import RESULTS, write_result

from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.experiments.rehearsal.instant_server import fill, requested_schema
from prefcraft.settings import EMBEDDED_MODEL_NAME

MODEL = f"hosted_vllm/{EMBEDDED_MODEL_NAME}"
PREFCRAFT = Path(sys.executable).parent / "prefcraft"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_EVERY_S = 0.02
RUN_LIMIT_S = 1800.0  # one prefcraft run, at most


# ---- the instant server, in a process of its own so that neither client shares its interpreter ----

class _Recorder(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.lock = threading.Lock()
        self.times: list[float] = []
        self.bodies: list[bytes] = []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart
    server: _Recorder

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": EMBEDDED_MODEL_NAME, "object": "model"}]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        body = json.loads(raw)
        with self.server.lock:
            self.server.times.append(time.time())
            self.server.bodies.append(raw)
        self._send({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": EMBEDDED_MODEL_NAME,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": json.dumps(fill(requested_schema(body)))}}],
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


def _serve(connection: Any) -> None:
    """The server process: sends its base URL, then answers `take` with the chat requests seen since the last one."""
    server = _Recorder(("127.0.0.1", 0))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    connection.send(f"http://127.0.0.1:{server.server_port}/v1")
    while connection.recv() == "take":
        with server.lock:
            taken = (server.times, server.bodies)
            server.times, server.bodies = [], []
        connection.send(taken)


class InstantServer:
    def __init__(self) -> None:
        self._connection, child = multiprocessing.Pipe()
        self._process = multiprocessing.get_context("spawn").Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        self.api_base: str = self._connection.recv()

    def take(self) -> tuple[list[float], list[bytes]]:
        """The arrival times and bodies of the chat requests since the last `take`."""
        self._connection.send("take")
        return self._connection.recv()

    def close(self) -> None:
        self._connection.send("stop")
        self._process.join(5)


# ---- the two clients ----

def scaled_users(path: Path, copies: int) -> int:
    """`copies` copies of the bundled users at `path`, each copy's users and first turns marked with its number; the
    test pairs written."""
    rows = [json.loads(line) for line in SAMPLE_USERS.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open("w", encoding="utf-8") as file:
        for copy in range(copies):
            for row in rows:
                marked = {**row, "user_id": f"{row['user_id']}_c{copy}",
                          "conversation_id": f"{row['conversation_id']}_c{copy}",
                          "context": [{**row["context"][0], "content": f"{row['context'][0]['content']} (#{copy})"},
                                      *row["context"][1:]]}
                file.write(json.dumps(marked) + "\n")
    return sum(row["split"] == "test" for row in rows) * copies


@dataclass
class CpuSample:
    at: float
    cpu_s: float


def _process_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def _cpu_at(samples: list[CpuSample], moment: float) -> float:
    """The process's CPU seconds at `moment`, from the sample nearest before it."""
    before = [sample.cpu_s for sample in samples if sample.at <= moment]
    return before[-1] if before else 0.0


def run_prefcraft(server: InstantServer, threads: int, copies: int, extra: list[str]) -> tuple[dict[str, Any],
                                                                                              list[bytes]]:
    """One `synthesizeme evaluate` in a fresh scratch folder: what it cost, and the request bodies it sent."""
    scratch = Path(tempfile.mkdtemp(prefix="client-overhead-"))
    data = scratch / "users.jsonl"
    pairs = scaled_users(data, copies)
    command = [str(PREFCRAFT), "synthesizeme", "evaluate", "--methods", "baseline", "--data", str(data),
               "--threads", str(threads), "--task-model", MODEL, "--task-api-base", server.api_base, "--no-serve",
               "--tracking-uri", f"sqlite:///{scratch}/mlflow.db", "--cache-dir", str(scratch / "cache"),
               "--output-dir", str(scratch / "out"), *extra]
    started = time.time()
    log = scratch / "prefcraft.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(command, cwd=scratch, stdout=subprocess.DEVNULL, stderr=stderr)
    samples: list[CpuSample] = []
    while not (ended := os.wait4(process.pid, os.WNOHANG))[0]:
        if time.time() - started > RUN_LIMIT_S:
            process.kill()
        if (cpu := _process_cpu_s(process.pid)) is not None:
            samples.append(CpuSample(time.time(), cpu))
        time.sleep(SAMPLE_EVERY_S)
    _, status, usage = ended
    process.returncode = status  # reaped here, not by Popen
    if status != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"prefcraft failed ({status}): {shlex.join(command)}\n{tail}")
    times, bodies = server.take()
    calling_s = max(times[-1] - times[0], 1e-6)
    calling_cpu_s = _cpu_at(samples, times[-1]) - _cpu_at(samples, times[0])
    return {
        "copies": copies, "pairs": pairs, "calls": len(bodies), "threads": threads,
        "wall_s": round(time.time() - started, 2), "calling_s": round(calling_s, 2),
        "requests_per_s": round(len(bodies) / calling_s, 1),
        "cpu_ms_per_call": round(1000 * calling_cpu_s / len(bodies), 2),
        "cpu_total_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "mlflow_db_mb": round(_megabytes(scratch / "mlflow.db"), 2),
        "mlflow_artifacts_mb": round(_megabytes(scratch / "mlruns"), 2),
        "cache_mb": round(_megabytes(scratch / "cache"), 2),
    }, bodies


def run_plain(server: InstantServer, bodies: list[bytes], threads: int) -> dict[str, Any]:
    """`bodies` sent again by httpx from `threads` threads, one keep-alive client each."""
    url = f"{server.api_base}/chat/completions"
    local = threading.local()

    def send(body: bytes) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=60)
        local.client.post(url, content=body, headers={"Content-Type": "application/json"}).raise_for_status()

    import httpx

    cpu = time.process_time()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(send, bodies))
    cpu_s = time.process_time() - cpu
    times, _ = server.take()
    calling_s = max(times[-1] - times[0], 1e-6)
    return {"calls": len(times), "requests_per_s": round(len(times) / calling_s, 1),
            "cpu_ms_per_call": round(1000 * cpu_s / len(times), 2)}


def _megabytes(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file()) / 2**20 if path.is_dir() else 0.0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    server = InstantServer()
    try:
        runs = []
        for threads in args.threads:
            prefcraft, bodies = run_prefcraft(server, threads, args.copies, args.prefcraft_args)
            plain = run_plain(server, bodies, threads)
            runs.append({"threads": threads, "prefcraft": prefcraft, "plain": plain,
                         "ratio": round(prefcraft["requests_per_s"] / plain["requests_per_s"], 3)})
            print(summary_line(runs[-1]), flush=True)
        memory = None
        if args.memory_copies:
            memory, _ = run_prefcraft(server, max(args.threads), args.memory_copies, args.prefcraft_args)
            print(f"memory: {memory['calls']} calls, peak RSS {memory['peak_rss_mb']} MB "
                  f"(against {runs[-1]['prefcraft']['peak_rss_mb']} MB at {runs[-1]['prefcraft']['calls']})",
                  flush=True)
    finally:
        server.close()
    return {"copies": args.copies, "prefcraft_args": args.prefcraft_args, "runs": runs, "larger_run": memory}


def summary_line(run: dict[str, Any]) -> str:
    prefcraft, plain = run["prefcraft"], run["plain"]
    return (f"{run['threads']:>2} threads, {prefcraft['calls']} calls: prefcraft {prefcraft['requests_per_s']} req/s "
            f"{prefcraft['cpu_ms_per_call']} ms CPU/call | plain {plain['requests_per_s']} req/s "
            f"{plain['cpu_ms_per_call']} ms CPU/call | ratio {run['ratio']} | peak RSS {prefcraft['peak_rss_mb']} MB, "
            f"mlflow.db {prefcraft['mlflow_db_mb']} MB, cache {prefcraft['cache_mb']} MB, wall {prefcraft['wall_s']} s")


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=20, help="copies of the 12 bundled users (8 calls per user)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--memory-copies", type=int, default=0,
                        help="also run with this many copies at the most threads: peak RSS at a second size")
    parser.add_argument("--prefcraft-args", type=shlex.split, default=[], metavar="'ARGS'",
                        help="more flags for the prefcraft command, as one quoted string")
    parser.add_argument("--output", type=Path, default=RESULTS / "client_overhead.json")
    return parser


def main() -> None:
    args = make_parser().parse_args()
    result = measure(args)
    write_result(args.output, result)
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
