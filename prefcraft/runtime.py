"""Bringing models up for a command: start the server if one is needed, point the cache, fail fast if unreachable."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import dspy

from prefcraft.backends import managed_server
from prefcraft.errors import PrefcraftError
from prefcraft.executors import Item, Result
from prefcraft.lm import build_adapter, build_lm, check_configured, check_reachable, configure_cache, use_disk_cache
from prefcraft.settings import ModelSettings, Role, Settings

logger = logging.getLogger(__name__)


@contextmanager
def model_session(settings: Settings) -> Iterator[Settings]:
    """Yields settings in which every model has a reachable endpoint; stops any server it started on exit.

    An error from inside the block is re-raised as ServerUnreachableError when a model's server no longer answers.
    """
    with ExitStack() as stack:
        cache_dir = configure_cache(settings)  # before the served models get their address, which changes per run
        if settings.roles_needing_server():
            server = stack.enter_context(managed_server(settings.server))
            settings = settings.with_api_base(server.base_url)
        check_servers(settings)
        logger.info("DSPy cache: %s", cache_dir)
        try:
            yield settings
        except PrefcraftError:
            raise
        except Exception:
            # A model call failed somewhere inside DSPy: if a server stopped answering, say that instead.
            check_servers(settings)
            raise


def check_servers(settings: Settings) -> None:
    """Raise ConfigError when a role's model has nowhere to send calls, ServerUnreachableError when the server of
    any role's model does not answer."""
    roles: tuple[Role, ...] = ("task", "prompt", "judge")
    for role in roles:
        check_configured(settings.model_for(role), role)
    for role in roles:
        check_reachable(settings.model_for(role))


def lm_context(settings: Settings, role: Role = "task") -> dspy.context:
    """A dspy.context that runs programs on the model of `role` with its structured-output adapter."""
    model = settings.model_for(role)
    return dspy.context(lm=build_lm(model), adapter=build_adapter(model))


def run_in_worker(
    function: Callable[[Item], Result], item: Item, *, model: ModelSettings, cache_dir: Path
) -> Result | str:
    """`function(item)` in a process of its own (a Ray task), on `model` with its structured-output adapter and with
    DSPy's disk cache in the driver's `cache_dir`, so that a rerun repeats no answered call: DSPy settings do not
    cross processes. A PrefcraftError comes back as its message, returned rather than raised: not every error of ours
    survives pickling."""
    use_disk_cache(cache_dir)
    with dspy.context(lm=build_lm(model), adapter=build_adapter(model)):
        try:
            return function(item)
        except PrefcraftError as error:
            return str(error)
