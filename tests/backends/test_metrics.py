"""Reading llama.cpp's prompt-cache counters and vLLM's request counters from a loopback server that publishes
Prometheus text."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from prefcraft.backends.counters import (
    PromptCache,
    ServedRequests,
    metered_prompt_cache,
    read_prompt_cache,
    read_served_requests,
)

COUNTERS = {"evaluated": 100, "cached": 0}
# As vLLM 0.32 publishes them: one series per finish reason, a `_created` timestamp beside each.
LABELS = 'engine="0",model_name="SmolLM2-135M-Instruct"'
VLLM_TEXT = "".join([
    "# TYPE vllm:request_success_total counter\n",
    *(f'vllm:request_success_total{{{LABELS},finished_reason="{reason}"}} {count}\n'
      for reason, count in (("stop", 9.0), ("length", 2.0), ("abort", 1.0), ("error", 0.0))),
    f'vllm:request_success_created{{{LABELS},finished_reason="stop"}} 1.7957059880471716e+09\n',
    f"vllm:prompt_tokens_total{{{LABELS}}} 9675.0\n",
    f"vllm:generation_tokens_total{{{LABELS}}} 808.0\n",
])


class MetricsHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/metrics":
            self.send_error(404)
            return
        body = (
            "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
            "# TYPE llamacpp:prompt_tokens_total counter\n"
            f"llamacpp:prompt_tokens_total {COUNTERS['evaluated']}\n"
            f"llamacpp:prompt_tokens_cached_total {COUNTERS['cached']}\n"
            "llamacpp:tokens_predicted_total 7\n"
            + VLLM_TEXT
        ).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def metrics_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), MetricsHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_counters_are_read_from_the_server_root(metrics_server):
    COUNTERS.update(evaluated=100, cached=300)
    assert read_prompt_cache(metrics_server) == PromptCache(evaluated=100, cached=300)
    assert PromptCache(100, 300).share == 0.75


def test_a_block_gets_the_counters_difference(metrics_server):
    COUNTERS.update(evaluated=100, cached=0)
    with metered_prompt_cache(metrics_server) as meter:
        COUNTERS.update(evaluated=150, cached=150)
    assert meter.usage == PromptCache(evaluated=50, cached=150)
    assert meter.usage.as_metrics("m_") == {
        "m_prompt_tokens_evaluated": 50.0, "m_prompt_tokens_cached": 150.0, "m_prompt_cache_share": 0.75,
    }


def test_a_server_without_llamacpp_metrics_gives_none(metrics_server):
    assert read_prompt_cache(metrics_server.replace("/v1", "/elsewhere/v1")) is None
    with metered_prompt_cache(None) as meter:
        pass
    assert meter.usage is None
    assert read_prompt_cache("http://127.0.0.1:9/v1", timeout_s=0.5) is None


def test_vllm_requests_are_summed_over_finish_reasons(metrics_server):
    assert read_served_requests(metrics_server) == ServedRequests(
        finished=12, cut_short=2, prompt_tokens=9675, generation_tokens=808)
    assert ServedRequests(12, 2, 9675, 808) - ServedRequests(10, 1, 9000, 800) == ServedRequests(2, 1, 675, 8)


def test_no_vllm_counters_from_a_server_without_them():
    assert read_served_requests("http://127.0.0.1:9/v1", timeout_s=1) is None
