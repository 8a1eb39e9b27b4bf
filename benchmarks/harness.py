"""What the cost benchmarks share: their common flags, the model they measure, a scratch session, a cold run then a
warm re-run, and the result file.

The model is served by the embedded llama.cpp server, started for the benchmark, or by the server at `--task-api-base`.
The session keeps everything it writes (MLflow store, DSPy cache, outputs, server logs) in a fresh scratch folder, and
its DSPy cache is the one prefcraft's own `configure_cache` points at: the first run starts from an empty cache, the
re-run in the same session repeats it and should find every answer there. Calls and tokens are prefcraft's usage
metering (each runner's per-step `LMUsage`, cache hits excluded); the server's prompt-token counters come from
llama.cpp's /metrics. The result file says how it was made (command line, machine, date and git commit) and is replaced
in one step, so that a run cut short leaves the last complete one. A benchmark that compares small-model profiles names
each as `default` (today's) or a TOML file whose `[small_model]` table sets its bounds. """

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pydantic

from prefcraft.backends import managed_server
from prefcraft.backends.counters import metered_prompt_cache
from prefcraft.engine.evaluation import StepCost
from prefcraft.engine.lm import configure_cache
from prefcraft.files import write_text_atomic
from prefcraft.settings import ModelSettings, ServerSettings, Settings, SmallModelProfile
from prefcraft.tracking.runs import start_tracking

RESULTS = Path(__file__).resolve().parent / "results"
REPOSITORY = RESULTS.parent.parent
NOISY_LOGGERS = ("LiteLLM", "httpx", "alembic", "mlflow")
DEFAULT_PROFILE = "default"


def make_parser(doc: str, result_name: str, *, threads: int = 4, timeout_s: float = 600.0) -> argparse.ArgumentParser:
    """A parser with the flags every benchmark takes, named as prefcraft's settings flags (their former spellings,
    which the recorded commands of earlier results use, still taken); `result_name` is its file under
    benchmarks/results/."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=threads, help="concurrent LM calls")
    parser.add_argument("--task-timeout-s", "--timeout-s", type=float, default=timeout_s,
                        help="per call: a loaded machine is slow")
    parser.add_argument("--task-api-base", "--api-base", help="measure the model of this OpenAI-compatible server "
                        "instead of starting the embedded one")
    parser.add_argument("--server-backend", "--backend", choices=["llamacpp", "vllm"], default="llamacpp",
                        help="the server started for the bundled model (default: %(default)s)")
    parser.add_argument("--server-executable", help="with --server-backend vllm: the vllm executable "
                        "(.venv-vllm/bin/vllm)")
    parser.add_argument("--server-extra-args", type=shlex.split, default=[], metavar="'ARGS'",
                        help="more flags for the started server, as one quoted string")
    parser.add_argument("--task-model", "--model", default=ModelSettings().model,
                        help="litellm model string, with --task-api-base (default: %(default)s)")
    parser.add_argument("--output", type=Path, default=RESULTS / result_name)
    return parser


def load_profile(source: str) -> SmallModelProfile:
    """Today's small-model profile for "default", else the `[small_model]` table of the TOML file `source`; a file
    that cannot give one is an argparse error that names it."""
    if source == DEFAULT_PROFILE:
        return SmallModelProfile()
    try:
        with open(source, "rb") as file:
            return SmallModelProfile.model_validate(tomllib.load(file)["small_model"])
    except OSError as error:
        reason = error.strerror
    except tomllib.TOMLDecodeError as error:
        reason = f"not TOML ({error})"
    except KeyError:
        reason = "no [small_model] table"
    except pydantic.ValidationError as error:
        reason = f"not a small-model profile: {error}"
    raise argparse.ArgumentTypeError(f"profile {source}: {reason}")


def configure_logging(*quiet: str) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    for name in (*NOISY_LOGGERS, *quiet):
        logging.getLogger(name).setLevel(logging.WARNING)


@dataclass
class Endpoint:
    """The model a benchmark measures, and the seconds its server took to start (0 for --task-api-base)."""

    model: ModelSettings
    start_seconds: float
    scratch: Path


@contextmanager
def model_endpoint(args: argparse.Namespace, server: ServerSettings | None = None,
                   **model_fields: Any) -> Iterator[Endpoint]:
    """The model at `--task-api-base`, or the bundled model on the server `--server-backend` names (for llama.cpp,
    `server`'s settings) started for the block; `model_fields` override ModelSettings' defaults. Its scratch folder
    holds the server's logs and whatever the benchmark writes."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{args.output.stem}-"))
    fields = {"timeout_s": args.task_timeout_s, **model_fields}
    if args.task_api_base:
        yield Endpoint(ModelSettings(model=args.task_model, api_base=args.task_api_base, **fields), 0.0, scratch)
        return
    started = time.perf_counter()
    settings = (server or ServerSettings()).model_copy(update={
        "log_dir": scratch / "logs", "backend": args.server_backend, "executable": args.server_executable,
        "extra_args": args.server_extra_args})
    with managed_server(settings) as served:
        yield Endpoint(ModelSettings(api_base=served.base_url, **fields), round(time.perf_counter() - started, 1),
                       scratch)


def session_settings(args: argparse.Namespace, endpoint: Endpoint) -> Settings:
    """Settings for the runners, all of whose files go to the scratch folder, with MLflow tracking started and DSPy's
    cache (prefcraft's `configure_cache`) empty in it."""
    scratch = endpoint.scratch
    settings = Settings(task=endpoint.model, serve=False, threads=args.threads,
                        tracking_uri=f"sqlite:///{scratch}/mlflow.db", cache_dir=scratch / "cache")
    start_tracking(settings)
    logging.getLogger(__name__).info("DSPy cache: %s", configure_cache(settings))
    return settings


@dataclass
class Measured:
    """What one run of a benchmark's runner measured: per-step rows, each with `calls`, `prompt_tokens`,
    `completion_tokens` and `failures`, and the keys the benchmark reports of its own."""

    steps: list[dict[str, Any]]
    own: dict[str, Any] = field(default_factory=dict)


def measure(settings: Settings, run: Callable[[], Measured]) -> dict[str, Any]:
    """One run: its wall seconds, its steps and their totals, and the server's prompt tokens over it."""
    started = time.perf_counter()
    with metered_prompt_cache(settings.task.api_base) as server:
        measured = run()
    totals = {key: sum(row[key] for row in measured.steps)
              for key in ("calls", "prompt_tokens", "completion_tokens", "failures")}
    return {
        "wall_seconds": round(time.perf_counter() - started, 1),
        "lm_calls": totals.pop("calls"),
        **totals,
        "server_prompt_tokens": asdict(server.usage) if server.usage else None,
        "steps": measured.steps,
        **measured.own,
    }


def cold_then_warm(settings: Settings, run: Callable[[], Measured]) -> dict[str, dict[str, Any]]:
    """The run in the session's empty cache, then again in the same cache (its LM calls should be 0)."""
    return {"first_run": measure(settings, run), "rerun_same_cache": measure(settings, run)}


def step_row(cost: StepCost, items: int, item: str, **labels: str) -> dict[str, Any]:
    """One step's cost in total and per item (instance, question, scenario), as the evaluation benchmarks report it."""
    return {**labels, **asdict(cost.usage), "seconds": round(cost.seconds, 2), "failures": cost.failures,
            f"calls_per_{item}": cost.usage.calls / items,
            f"prompt_tokens_per_{item}": cost.usage.prompt_tokens / items,
            f"completion_tokens_per_{item}": cost.usage.completion_tokens / items,
            f"seconds_per_{item}": round(cost.seconds / items, 2)}


def write_result(path: Path, result: dict[str, Any]) -> None:
    """`result`, after how it was made, replacing `path` in one step."""
    made = {"command": shlex.join(["python", *sys.argv]), "machine": machine(),
            "date": datetime.now(UTC).isoformat(timespec="seconds"), "commit": commit()}
    write_text_atomic(path, json.dumps(made | result, indent=2, ensure_ascii=False) + "\n")


def measure_evaluation(args: argparse.Namespace, run: Callable[[Settings, Path], Measured],
                       described: Callable[[Settings], dict[str, Any]]) -> None:
    """An evaluation benchmark: `run(session, output_dir)` on the benchmark's model endpoint, cold then warm; the
    result, after what `described` says of it, written to `args.output` and summed up."""
    configure_logging()
    with model_endpoint(args) as endpoint:
        session = session_settings(args, endpoint)
        runs = cold_then_warm(session, lambda: run(session, endpoint.scratch / "out"))
    result = {**described(session), "threads": args.threads, "model": session.task.model, **runs}
    write_result(args.output, result)
    print_summary(result, args.output)


def print_summary(result: dict[str, Any], path: Path) -> None:
    """The first run's totals and the re-run's calls, for the evaluation benchmarks."""
    first = result["first_run"]
    print(json.dumps({key: value for key, value in first.items() if key != "steps"}, indent=2))
    print(f"re-run LM calls: {result['rerun_same_cache']['lm_calls']}; written to {path}")


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version()}


def commit() -> str | None:
    """The checked-out commit, marked `-dirty` when the working tree differs from it; None outside a git checkout."""
    try:
        described = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=40"], cwd=REPOSITORY,
                                   capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return described.stdout.strip()
