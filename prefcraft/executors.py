"""Where independent work items run: here, one after another (`local`), each in one of several processes of this
machine (`processes`), or as Ray tasks on a cluster (`ray`)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Literal, TypeVar

from prefcraft.errors import ConfigError
from prefcraft.options import Options, Positive, option

Executor = Literal["local", "processes", "ray"]
EXECUTORS: tuple[Executor, ...] = ("local", "processes", "ray")


class ExecutorOptions(Options):
    """Where a step's independent work items run."""

    executor: Executor = option(
        "local", "run work items here, one after another; each in one of --workers processes of this machine "
        "(processes: for a server faster than one Python process drives, about 150 LM calls a second here); or each "
        "as a Ray task (ray: `pip install -e '.[distributed]'` in the checkout; make does it)")
    address: str | None = option(None, "Ray cluster to join: 'auto', ray://HOST:10001 (default: a new local one)")
    workers: Positive | None = option(None, "processes: how many work at once (default: one per CPU core)")


Item = TypeVar("Item")
Result = TypeVar("Result")


def map_in_workers(
    function: Callable[[Item], Result], items: Iterable[Item], options: ExecutorOptions
) -> Iterator[tuple[Item, Result]]:
    """`function` on every item where `options` says (not `local`), yielding (item, result) as each finishes. The
    function and the items travel pickled: plain data and importable functions, not models, DSPy settings or open
    connections."""
    if options.executor == "ray":
        return ray_map(function, items, address=options.address)
    return process_map(function, items, workers=options.workers)


def process_map(
    function: Callable[[Item], Result], items: Iterable[Item], *, workers: int | None = None
) -> Iterator[tuple[Item, Result]]:
    """Run `function` on every item in `workers` processes of this machine (default: one per CPU core), yielding
    (item, result) as each finishes. The processes are spawned, not forked: this process holds DSPy's and litellm's
    threads, which a fork would copy mid-work. Stopped early (an error, Ctrl-C), the items running finish and those
    not started are dropped."""
    import cloudpickle  # as Ray does: a DSPy signature is a class made at run time, which pickle cannot name

    pool = ProcessPoolExecutor(max_workers=workers or os.cpu_count(), mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {pool.submit(_call_pickled, cloudpickle.dumps((function, item))): item for item in items}
        for future in as_completed(futures):
            yield futures[future], cloudpickle.loads(future.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _call_pickled(payload: bytes) -> bytes:
    import cloudpickle

    function, item = cloudpickle.loads(payload)
    return cloudpickle.dumps(function(item))


def ray_map(
    function: Callable[[Item], Result], items: Iterable[Item], *, address: str | None = None
) -> Iterator[tuple[Item, Result]]:
    """Run `function` on every item as a Ray task (one CPU each), yielding (item, result) as each task finishes.

    Joins the Ray runtime this process already started, else the cluster at `address` ("auto": the one this machine
    belongs to, or RAY_ADDRESS), else starts a new local one that listens on loopback only. `function` and the items
    travel pickled: they must be plain data and importable functions, not models, DSPy settings or open connections.
    """
    if address is None:
        keep_local_ray_on_loopback()
    ray = _import_ray()
    if not ray.is_initialized():
        ray.init(address=address or "local")  # None would join a cluster that `ray start` left running here
    task = ray.remote(num_cpus=1)(function)
    pending = {task.remote(item): item for item in items}
    while pending:
        [done], _ = ray.wait(list(pending), num_returns=1)
        yield pending.pop(done), ray.get(done)


def keep_local_ray_on_loopback() -> None:
    """A local Ray cluster that this process starts listens on 127.0.0.1 only and advertises that address, not the
    machine's network address: for a cluster of one machine, Ray's switch for Windows and macOS (read on Linux too).

    Ray reads it once, when it is imported: call this before `import ray`. A cluster joined by address is left alone.
    """
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray, which is not installed",
            "pip install -e '.[distributed]' in the prefcraft checkout (make does it)"
        ) from None
    return ray
