"""What one LM call costs the client, by transport: prefcraft's LM (`build_lm`, which sends `max_tokens`, counts and
retries refusals; for one endpoint of the user's own, DSPy's native engine since 2026-11-29, DSPy's LiteLLM engine
before) against DSPy's own native engine as `dspy.LM` builds it (lm15, its default for an OpenAI-compatible endpoint),
on the same requests.

An instant server (`python -m prefcraft.experiments.rehearsal.instant_server`, its own process, loopback) answers each
request at once. Both LMs send the same messages, from one thread, with DSPy's cache off, so that every call is sent;
each round sends `--calls` distinct requests through one LM and then through the other, after a warm-up. Reported per
LM: this process's CPU ms per call (user + system) and calls per second, per round and the median. The bare LM call is
measured (no adapter, no program): the transport's own share of what `client_overhead.py` measures end to end.

Run: .venv/bin/python benchmarks/lm_transport.py [--calls 300] [--runs 3] [--output FILE]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dspy
from harness import RESULTS, configure_logging, write_result

from prefcraft.engine.lm import build_lm
from prefcraft.settings import ModelSettings

MODEL = "hosted_vllm/rehearsal-task"
MAX_TOKENS = 64
WARM_UP_CALLS = 20
PROMPT_WORDS = 300  # about the size of a short judge prompt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300, help="calls per LM per round")
    parser.add_argument("--runs", type=int, default=3, help="rounds: each sends --calls through one LM, then the other")
    parser.add_argument("--output", type=Path, default=RESULTS / "lm_transport.json")
    args = parser.parse_args()
    configure_logging()
    server = subprocess.Popen([sys.executable, "-m", "prefcraft.experiments.rehearsal.instant_server"],
                              stdout=subprocess.PIPE, text=True)
    try:
        api_base = _served_url(server)
        lms = {"prefcraft (build_lm)": _prefcraft_lm(api_base), "DSPy native (dspy.LM, lm15)": _native_lm(api_base)}
        for label, lm in lms.items():
            _send(lm, WARM_UP_CALLS, f"warm-up {label}")
        rounds: dict[str, list[dict[str, float]]] = {label: [] for label in lms}
        for number in range(args.runs):
            for label, lm in lms.items():
                rounds[label].append(_send(lm, args.calls, f"round {number} {label}"))
    finally:
        server.terminate()
        server.wait(10)
    result: dict[str, Any] = {"calls_per_round": args.calls, "max_tokens": MAX_TOKENS, "rounds": rounds,
                              "median": {label: {key: statistics.median(row[key] for row in rows)
                                                 for key in ("cpu_ms_per_call", "calls_per_s")}
                                         for label, rows in rounds.items()}}
    write_result(args.output, result)
    for label, median in result["median"].items():
        print(f"{label:28s} {median['cpu_ms_per_call']:.2f} ms CPU per call, {median['calls_per_s']:.0f} calls/s "
              "(one thread, median of the rounds)")
    print(f"written to {args.output}")


def _served_url(server: subprocess.Popen[str]) -> str:
    assert server.stdout is not None
    line = server.stdout.readline().strip()
    if not line.startswith("http"):
        raise SystemExit(f"the instant server did not start: {line!r}")
    return line  # its base URL, /v1 included


def _prefcraft_lm(api_base: str) -> dspy.LM:
    lm = build_lm(ModelSettings(model=MODEL, api_base=api_base, max_tokens=MAX_TOKENS))
    lm.cache = False
    return lm


def _native_lm(api_base: str) -> dspy.LM:
    return dspy.LM(MODEL, api_base=api_base, api_key="EMPTY", cache=False, max_tokens=MAX_TOKENS, temperature=0.0)


def _send(lm: dspy.LM, calls: int, tag: str) -> dict[str, float]:
    started_cpu, started = _cpu_s(), time.perf_counter()
    for number in range(calls):
        lm(f"{tag}, request {number}: " + "word " * PROMPT_WORDS)  # one user message
    seconds, cpu_s = time.perf_counter() - started, _cpu_s() - started_cpu
    return {"cpu_ms_per_call": round(1000 * cpu_s / calls, 3), "calls_per_s": round(calls / seconds, 1)}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
