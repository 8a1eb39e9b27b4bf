"""Prompt tokens a llama.cpp server evaluated and served from its cache, read from its Prometheus `/metrics`."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

EVALUATED = "llamacpp:prompt_tokens_total"
CACHED = "llamacpp:prompt_tokens_cached_total"


@dataclass
class PromptCache:
    evaluated: int = 0
    cached: int = 0

    @property
    def share(self) -> float:
        """Share of prompt tokens served from the cache."""
        total = self.evaluated + self.cached
        return self.cached / total if total else 0.0

    def __sub__(self, other: PromptCache) -> PromptCache:
        return PromptCache(self.evaluated - other.evaluated, self.cached - other.cached)

    def as_metrics(self, prefix: str = "") -> dict[str, float]:
        return {
            f"{prefix}prompt_tokens_evaluated": float(self.evaluated),
            f"{prefix}prompt_tokens_cached": float(self.cached),
            f"{prefix}prompt_cache_share": self.share,
        }


def read_prompt_cache(api_base: str, timeout_s: float = 5.0) -> PromptCache | None:
    """The server's counters so far, or None if it publishes no llama.cpp metrics (another server, or none)."""
    url = re.sub(r"/v1/?$", "", api_base.rstrip("/")) + "/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            text = response.read().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None
    counters = dict(re.findall(r"^(\S+) ([0-9.eE+-]+)$", text, re.M))
    if EVALUATED not in counters or CACHED not in counters:
        return None
    return PromptCache(int(float(counters[EVALUATED])), int(float(counters[CACHED])))


@dataclass
class PromptCacheMeter:
    """Filled in when the `metered_prompt_cache()` block exits; None where the server publishes no counters."""

    usage: PromptCache | None = None


@contextmanager
def metered_prompt_cache(api_base: str | None) -> Iterator[PromptCacheMeter]:
    """The server's prompt-token counters over the block (every client's calls, so meter one job at a time)."""
    meter = PromptCacheMeter()
    before = read_prompt_cache(api_base) if api_base else None
    try:
        yield meter
    finally:
        after = read_prompt_cache(api_base) if before is not None else None
        meter.usage = after - before if after is not None and before is not None else None
