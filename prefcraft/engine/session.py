"""Bringing models up for a command: start the server if one is needed, point the cache, fail fast if unreachable."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import dspy

from prefcraft.backends import managed_server
from prefcraft.engine.lm import (
    EndpointFaults,
    StopCheck,
    build_adapter,
    build_lm,
    check_configured,
    check_reachable,
    configure_cache,
    use_disk_cache,
)
from prefcraft.errors import PrefcraftError
from prefcraft.executors import Item, Result
from prefcraft.settings import ModelSettings, Role, Settings, SmallModelProfile

logger = logging.getLogger(__name__)


@contextmanager
def model_session(settings: Settings) -> Iterator[Settings]:
    """Yields settings in which every model has a reachable endpoint; stops any server it started on exit.

    An error from inside the block is re-raised as ServerUnreachableError when a model's server no longer answers. A
    call that timed out, or found its server gone, ends the block with one error saying so (EndpointFaults), whatever
    the block made of the failed calls.
    """
    with ExitStack() as stack:
        stack.enter_context(stoppable())
        cache_dir = configure_cache(settings)  # before the served models get their address, which changes per run
        if settings.roles_needing_server():
            server = stack.enter_context(managed_server(settings.server))
            settings = settings.with_api_base(server.base_url)
        check_servers(settings)
        logger.info("DSPy cache: %s", cache_dir)
        stack.enter_context(EndpointFaults.watch())
        try:
            yield settings
        except PrefcraftError:
            raise
        except Exception:
            # A model call failed somewhere inside DSPy: if a server was too slow or stopped answering, say that.
            if (fault := EndpointFaults.error()) is not None:
                raise fault from None
            check_servers(settings)
            raise
        if (fault := EndpointFaults.error()) is not None:
            raise fault


class Terminated(SystemExit):
    """SIGTERM, raised in the main thread: the command unwinds as on Ctrl-C (servers stopped, the MLflow run ended
    KILLED), then the process exits with 143, the status the signal itself would have given."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


STOPS: dict[int, type[BaseException]] = {signal.SIGINT: KeyboardInterrupt, signal.SIGTERM: Terminated}


@contextmanager
def stoppable() -> Iterator[None]:
    """While the block runs in the main thread, SIGINT raises KeyboardInterrupt and SIGTERM raises Terminated there,
    unless the process installed handlers of its own.

    A process that a shell starts in the background inherits SIGINT ignored, and Python then installs no handler: only
    DSPy's thread pools, which set one while they run, took Ctrl-C, so a sequential step (MIPROv2 proposing
    instructions) ignored it. SIGTERM's default ends the process on the spot, leaving the MLflow run RUNNING.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    defaults = (signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler, None)
    previous = {signum: signal.getsignal(signum) for signum in STOPS}
    for signum, handler in previous.items():
        if handler in defaults:
            signal.signal(signum, _stop)
    StopCheck.requested = None
    try:
        yield
        StopCheck.raise_if_requested()  # the signal's exception went astray and no LM call came after it
    finally:
        # A stop stays requested until the next session: the threads of a pool that the main thread's exception left
        # (DSPy's workers, a user executor's) go on picking up work while the command unwinds.
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _stop(signum: int, frame: object) -> None:
    StopCheck.requested = STOPS[signum]  # for the LM calls still to come, should this exception go astray
    logger.warning("%s: stopping", signal.Signals(signum).name)
    raise STOPS[signum]()


def check_servers(settings: Settings) -> None:
    """Raise ConfigError when a role's model has nowhere to send calls, ServerUnreachableError when the server of
    any role's model does not answer."""
    roles: tuple[Role, ...] = ("task", "prompt", "judge")
    for role in roles:
        check_configured(settings.model_for(role), role)
    for role in roles:
        check_reachable(settings.model_for(role), role)


def lm_context(settings: Settings, role: Role = "task") -> dspy.context:
    """A dspy.context that runs programs on the model of `role` with its structured-output adapter."""
    model = settings.model_for(role)
    return program_context(model, settings.small_model_profile())


def program_context(model: ModelSettings, profile: SmallModelProfile | None) -> dspy.context:
    """A dspy.context with `program_settings(model, profile)`."""
    return dspy.context(**program_settings(model, profile))


def program_settings(model: ModelSettings, profile: SmallModelProfile | None) -> dict[str, Any]:
    """DSPy settings for programs on `model` with its structured-output adapter (bounded by the small-model `profile`,
    if on), keeping no trace: DSPy otherwise appends every call to the trace in its global settings (its last 10,000
    calls, each keeping its module, inputs and prediction alive for the whole command). An optimizer that needs a
    trace, such as BootstrapFewShot, opens one of its own."""
    return {"lm": build_lm(model), "adapter": build_adapter(model, profile), "trace": None}


def run_in_worker(
    function: Callable[[Item], Result], item: Item, *, model: ModelSettings, cache_dir: Path,
    profile: SmallModelProfile | None,
) -> Result | str:
    """`function(item)` in a process of its own (a Ray task), on `model` with its structured-output adapter (bounded by
    the driver's small-model `profile`, if on) and with
    DSPy's disk cache in the driver's `cache_dir`, so that a rerun repeats no answered call: DSPy settings do not
    cross processes. A PrefcraftError comes back as its message, returned rather than raised: not every error of ours
    survives pickling."""
    use_disk_cache(cache_dir)
    with program_context(model, profile):
        try:
            return function(item)
        except PrefcraftError as error:
            return str(error)
