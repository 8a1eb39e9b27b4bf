"""The embedded backend: llama.cpp's own server (the prebuilt `xllamacpp` wheel) with the bundled SmolLM2-135M.

`xllamacpp.Server` runs the HTTP server in a thread of the process that creates it, so prefcraft runs it in a child
process of its own (`python -m prefcraft.backends.llamacpp ...`): `ManagedServer` then stops it like any other
server. The server batches its slots' requests together, keeps each slot's prompt in its KV cache, and moves
prompts it evicts to a host-memory cache from which a later request with the same prefix restores them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import threading
from pathlib import Path

from prefcraft.backends.bundled import bundled_model_path
from prefcraft.errors import ConfigError
from prefcraft.settings import ServerSettings


def llamacpp_command(settings: ServerSettings, port: int) -> list[str]:
    if importlib.util.find_spec("xllamacpp") is None:
        raise ConfigError(
            "xllamacpp (llama.cpp's server) is not installed",
            "run `pip install -e '.[embedded]'` in the prefcraft checkout (the Makefile does this)",
        )
    model = Path(settings.model) if settings.model else bundled_model_path()
    if not model.is_file():
        raise ConfigError(f"server.model {model} is not a file", "point server.model at a GGUF file")
    command = [
        sys.executable, "-m", __name__,
        "--model", str(model),
        "--alias", settings.served_name,
        "--host", settings.host,
        "--port", str(port),
        "--slots", str(settings.slots),
        "--ctx-per-slot", str(settings.ctx_per_slot),
        "--cache-ram-mib", str(settings.cache_ram_mib),
    ]  # fmt: skip
    if settings.n_threads:
        command += ["--threads", str(settings.n_threads)]
    return command + settings.extra_args


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="llama.cpp's OpenAI-compatible server for one GGUF model")
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--ctx-per-slot", type=int, default=4096)
    parser.add_argument("--cache-ram-mib", type=int, default=256)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="any other xllamacpp.CommonParams attribute, e.g. n_batch=1024 (repeatable)")
    return parser


def _params(args: argparse.Namespace):  # -> xllamacpp.CommonParams (imported lazily: a compiled extension)
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}  # a set of names; a plain string would become a set of characters
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.slots
    params.n_ctx = args.slots * args.ctx_per_slot  # the slots share one context
    params.cache_prompt = True
    params.cache_ram_mib = args.cache_ram_mib
    params.endpoint_metrics = True
    if args.threads:
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
    for assignment in args.param:
        _set_param(params, assignment)
    return params


def _set_param(params: object, assignment: str) -> None:
    name, _, text = assignment.partition("=")
    if not hasattr(params, name):
        raise SystemExit(f"--param {assignment}: xllamacpp.CommonParams has no attribute {name!r}")
    current = getattr(params, name)
    if isinstance(current, bool):
        value: object = text.lower() in ("1", "true", "yes", "on")
    elif isinstance(current, int | float):
        value = type(current)(text)
    else:
        value = text
    setattr(params, name, value)


def main(argv: list[str] | None = None) -> None:
    import xllamacpp

    args = _parser().parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server = xllamacpp.Server(_params(args))
    print(f"llama.cpp server listening on {server.listening_address}", flush=True)
    stop.wait()
    # Ending normally would tear the server down, which waits for every generation in flight to finish: a server
    # whose prefcraft died (its parent-death SIGTERM) would compute on for minutes. Nothing here needs flushing.
    os._exit(0)


if __name__ == "__main__":
    main()
