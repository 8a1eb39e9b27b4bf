"""Where independent work items run: here, one after another (`local`), or as Ray tasks on a cluster (`ray`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, TypeVar

from prefcraft.errors import ConfigError

Executor = Literal["local", "ray"]
EXECUTORS: tuple[Executor, ...] = ("local", "ray")

Item = TypeVar("Item")
Result = TypeVar("Result")


def ray_map(
    function: Callable[[Item], Result], items: Iterable[Item], *, address: str | None = None
) -> Iterator[tuple[Item, Result]]:
    """Run `function` on every item as a Ray task (one CPU each), yielding (item, result) as each task finishes.

    Joins the Ray runtime this process already started, else the cluster at `address` ("auto": the one this machine
    belongs to; None: a new local one). `function` and the items travel pickled: they must be plain data and importable
    functions, not models, DSPy settings or open connections.
    """
    ray = _import_ray()
    if not ray.is_initialized():
        ray.init(address=address)
    task = ray.remote(num_cpus=1)(function)
    pending = {task.remote(item): item for item in items}
    while pending:
        [done], _ = ray.wait(list(pending), num_returns=1)
        yield pending.pop(done), ray.get(done)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--executor ray needs Ray, which is not installed", "pip install 'prefcraft[distributed]'"
        ) from None
    return ray
