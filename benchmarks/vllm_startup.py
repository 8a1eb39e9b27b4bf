"""Seconds until a vLLM server that prefcraft starts for the bundled SmolLM2 is ready (it lists the model), with the
start-up flags prefcraft chooses on this machine against vLLM's own defaults.

Each start is a fresh server (`prefcraft.backends.managed_server`, as `--server-backend vllm` starts one) on the bundled
model's converted folder, converted beforehand so that no start pays for the conversion. On a machine without a GPU
prefcraft passes `--dtype float32 --enforce-eager`; `vllm-defaults` passes `--dtype auto` and compiles its graphs, as
a bare `vllm serve` does. Each variant also answers one greedy question, so that a start that gives nonsense shows.

Run from the repository root (after `make vllm`):
    .venv/bin/python benchmarks/vllm_startup.py --server-executable .venv-vllm/bin/vllm [--starts 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from harness import RESULTS, configure_logging, write_result

from prefcraft.backends import managed_server
from prefcraft.backends.vllm import vllm_command
from prefcraft.settings import EMBEDDED_MODEL_NAME, ServerSettings

VARIANTS = {"prefcraft": {}, "vllm-defaults": {"dtype": "auto", "enforce_eager": False}}
QUESTION = "What is the capital of France? Answer in one word."


def ask(base_url: str) -> str:
    body = {"model": EMBEDDED_MODEL_NAME, "messages": [{"role": "user", "content": QUESTION}], "max_tokens": 16,
            "temperature": 0}
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)["choices"][0]["message"]["content"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-executable", required=True, help="the vllm executable (.venv-vllm/bin/vllm)")
    parser.add_argument("--starts", type=int, default=2, help="starts per variant")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--output", type=Path, default=RESULTS / "vllm_startup.json")
    args = parser.parse_args()
    configure_logging()
    rows = {}
    for variant in args.variants:
        settings = ServerSettings(backend="vllm", executable=args.server_executable, startup_timeout_s=900,
                                  log_dir=Path(tempfile.mkdtemp(prefix="vllm-startup-")), **VARIANTS[variant])
        command = vllm_command(settings, 0)  # converts the bundled model first, if it was not yet
        seconds, answers = [], []
        for _ in range(args.starts):
            started = time.perf_counter()
            with managed_server(settings) as server:
                seconds.append(round(time.perf_counter() - started, 1))
                answers.append(ask(server.base_url))
        rows[variant] = {"flags": command[command.index("--tensor-parallel-size") + 2:], "ready_s": seconds,
                         "median_ready_s": statistics.median(seconds), "answers": answers}
        print(variant, json.dumps(rows[variant]))
    write_result(args.output, {"question": QUESTION, "variants": rows})


if __name__ == "__main__":
    main()
