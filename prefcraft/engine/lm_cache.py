"""DSPy's response cache, keeping only replies worth serving again.

DSPy stores every reply whose HTTP call succeeded. Two kinds are not worth keeping, or a rerun after the server is
fixed would be served the same broken reply: a reply the server cut short (finish reason `length`), which is never
stored, and a reply the adapter could not parse, which is evicted from memory and disk as the parse fails. A reply
whose connection closed mid-body never reaches the cache: the call raises.

The disk tier is read and written from one thread of its own (`OneThreadDisk`): diskcache opens an SQLite connection
per shard in each thread that touches it, and DSPy's thread pools, one per evaluation, would open fresh ones for every
call. Its connections keep little of the database in the process's memory (`SQLITE_SETTINGS`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import dspy
from dspy.clients.cache import Cache
from dspy.utils.exceptions import AdapterParseError

from prefcraft.engine.usage import count_tally

CUT_SHORT = "length"

T = TypeVar("T")

SQLITE_SETTINGS = {"sqlite_mmap_size": 0, "sqlite_cache_size": 256}
"""diskcache's defaults map up to 64 MB of each shard's database into the process and cache up to 8,192 pages (32 MB)
of it per connection; with DSPy's 16 shards the process's memory grew with the cache on disk, up to about 1.5 GB. With
no mapping and 256 pages (1 MB) per shard, the operating system's file cache still keeps the pages read often."""

# The (request, ignored keys) of each cache read or write inside `evict_unparsed_replies`, shared with the worker
# threads in which DSPy's async calls use the cache.
_replies_in_flight: ContextVar[list[tuple[dict[str, Any], list[str] | None]] | None] = ContextVar(
    "replies_in_flight", default=None
)


class OneThreadDisk:
    """DSPy's disk tier (a diskcache FanoutCache) used from one long-lived thread, so that its SQLite connections are
    opened once per process instead of once per calling thread; the calling thread waits for each answer, so a stored
    reply is on disk when `put` returns. A forked process gets a thread of its own."""

    def __init__(self, disk: Any) -> None:
        self.disk = disk
        self._worker: ThreadPoolExecutor | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()
        for setting, value in SQLITE_SETTINGS.items():  # kept in the cache's own settings, for every connection
            self._run(disk.reset, setting, value)

    def get(self, key: str, default: Any = None) -> Any:
        return self._run(self.disk.get, key, default)

    def set(self, key: str, value: Any) -> bool:
        return self._run(self.disk.set, key, value)

    def delete(self, key: str) -> bool:
        return self._run(self.disk.delete, key)

    def __contains__(self, key: str) -> bool:
        return self._run(self.disk.__contains__, key)

    @property
    def size_limit(self) -> int:
        return self.disk.size_limit

    def _run(self, function: Callable[..., T], *args: Any) -> T:
        with self._lock:
            if self._worker is None or self._pid != os.getpid():
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="prefcraft-disk-cache")
                self._pid = os.getpid()
            worker = self._worker
        return worker.submit(function, *args).result()


class ReplyCache(Cache):
    """DSPy's two-tier cache that refuses replies cut short and can forget a reply by the request it answered; its disk
    tier used from one thread (`OneThreadDisk`)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.enable_disk_cache:
            self.disk_cache = OneThreadDisk(self.disk_cache)

    def get(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> Any:
        reply = super().get(request, ignored_args_for_cache_key)
        if reply is not None:
            _note(request, ignored_args_for_cache_key)
        return reply

    def put(
        self,
        request: dict[str, Any],
        value: Any,
        ignored_args_for_cache_key: list[str] | None = None,
        enable_memory_cache: bool = True,
    ) -> None:
        if CUT_SHORT in finish_reasons(value):
            return
        _note(request, ignored_args_for_cache_key)
        super().put(request, value, ignored_args_for_cache_key, enable_memory_cache)

    def forget(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> None:
        """Evict the reply to `request` from memory and disk, so that the next call asks the model again."""
        key = self.cache_key(request, ignored_args_for_cache_key)
        with self._lock:  # the lock under which DSPy writes the memory tier
            self.memory_cache.pop(key, None)
        if self.enable_disk_cache:
            self.disk_cache.delete(key)


@contextmanager
def evict_unparsed_replies() -> Iterator[None]:
    """Around an adapter call: when parsing its reply fails, that reply leaves the cache before the error goes on,
    and the failure is counted in the calling block's usage (`usage.metered`)."""
    replies: list[tuple[dict[str, Any], list[str] | None]] = []
    token = _replies_in_flight.set(replies)
    try:
        yield
    except AdapterParseError:
        count_tally("unparsed")
        if isinstance(dspy.cache, ReplyCache):
            for request, ignored in replies:
                dspy.cache.forget(request, ignored)
        raise
    finally:
        _replies_in_flight.reset(token)


def finish_reasons(record: Any) -> list[str | None]:
    """The finish reason of each choice in a cached record: DSPy's own record of a canonical call, or the raw
    OpenAI-style reply of a litellm call."""
    if isinstance(record, dict) and "responses" in record:
        return [response.get("finish_reason") for response in record["responses"]]
    choices = record.get("choices") if isinstance(record, dict) else getattr(record, "choices", None)
    return [choice.get("finish_reason") if isinstance(choice, dict) else getattr(choice, "finish_reason", None)
            for choice in choices or []]


def _note(request: dict[str, Any], ignored_args_for_cache_key: list[str] | None) -> None:
    replies = _replies_in_flight.get()
    if replies is not None:
        replies.append((request, ignored_args_for_cache_key))
