"""Where independent work items run: here, one after another (`local`), or as Ray tasks on a cluster (`ray`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, TypeVar

from prefcraft.errors import ConfigError
from prefcraft.options import Options, option

Executor = Literal["local", "ray"]
EXECUTORS: tuple[Executor, ...] = ("local", "ray")

class ExecutorOptions(Options):
    """Where a step's independent work items run."""

    executor: Executor = option(
        "local", "run work items here, one after another, or each as a Ray task (ray: `pip install -e "
        "'.[distributed]'` in the checkout; make does it)")
    address: str | None = option(None, "Ray cluster to join: 'auto', ray://HOST:10001 (default: a new local one)")


Item = TypeVar("Item")
Result = TypeVar("Result")


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
