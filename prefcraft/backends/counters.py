"""A model server's own counters, read from its Prometheus `/metrics`: prompt tokens a llama.cpp server evaluated and
served from its cache, and the requests and tokens a vLLM server completed."""

from __future__ import annotations

import re
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields

EVALUATED = "llamacpp:prompt_tokens_total"
CACHED = "llamacpp:prompt_tokens_cached_total"
VLLM_FINISHED = "vllm:request_success_total"  # one series per finish reason
VLLM_PROMPT_TOKENS = "vllm:prompt_tokens_total"
VLLM_GENERATION_TOKENS = "vllm:generation_tokens_total"
SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(\{[^}]*\})? ([0-9.eE+-]+)$", re.M)


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


@dataclass
class ServedRequests:
    """What a vLLM server completed: requests (whatever their finish reason), those of them it ended at max_tokens,
    and the prompt and generated tokens."""

    finished: int = 0
    cut_short: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0

    def __sub__(self, other: ServedRequests) -> ServedRequests:
        return ServedRequests(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))


def read_counters(api_base: str, timeout_s: float = 5.0) -> dict[str, dict[str, float]] | None:
    """Every sample of the server's `/metrics`, by metric name and label set; None if it publishes none."""
    url = re.sub(r"/v1/?$", "", api_base.rstrip("/")) + "/metrics"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            text = response.read().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return None
    counters: dict[str, dict[str, float]] = defaultdict(dict)
    for name, labels, value in SAMPLE.findall(text):
        counters[name][labels] = float(value)
    return counters


def read_prompt_cache(api_base: str, timeout_s: float = 5.0) -> PromptCache | None:
    """The server's counters so far, or None if it publishes no llama.cpp metrics (another server, or none)."""
    counters = read_counters(api_base, timeout_s) or {}
    if EVALUATED not in counters or CACHED not in counters:
        return None
    return PromptCache(int(sum(counters[EVALUATED].values())), int(sum(counters[CACHED].values())))


def read_served_requests(api_base: str, timeout_s: float = 5.0) -> ServedRequests | None:
    """A vLLM server's completed requests and tokens so far, or None if it publishes no vLLM metrics."""
    counters = read_counters(api_base, timeout_s) or {}
    if VLLM_FINISHED not in counters:
        return None
    finished = counters[VLLM_FINISHED]
    return ServedRequests(
        finished=int(sum(finished.values())),
        cut_short=int(sum(value for labels, value in finished.items() if 'finished_reason="length"' in labels)),
        prompt_tokens=int(sum(counters.get(VLLM_PROMPT_TOKENS, {}).values())),
        generation_tokens=int(sum(counters.get(VLLM_GENERATION_TOKENS, {}).values())),
    )


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
