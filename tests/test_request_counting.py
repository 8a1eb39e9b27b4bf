"""prefcraft counts every HTTP request it sends, as a counting stand-in server receives them: first attempts, retries
after a broken connection, and calls sent again while the same request waits (sent once, counted apart). A timeout
is never retried: the slow server would get the same work again. Answers the server ended at `max_tokens` are counted
too."""

import dspy
import pytest
from cutting_proxy import CuttingProxy
from openai_standin import StandInServer

from prefcraft.engine.lm import build_adapter, build_lm
from prefcraft.engine.usage import LMUsage, metered
from prefcraft.settings import ModelSettings

QUESTIONS = [dspy.Example(question=f"question {index}").with_inputs("question") for index in range(6)]


@pytest.fixture
def standin():
    servers = []

    def start(**options):
        servers.append(StandInServer(**options))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def run(model: ModelSettings, examples, num_threads: int = 2) -> tuple[list, LMUsage]:
    with dspy.context(lm=build_lm(model), adapter=build_adapter(model)), metered() as meter:
        predict = dspy.Predict("question -> answer")
        answers = predict.batch(examples, num_threads=num_threads, return_failed_examples=True)
    return answers, meter.usage


def test_every_request_is_counted_as_the_server_received_it(standin):
    server = standin()
    _, usage = run(ModelSettings(api_base=server.api_base), QUESTIONS)
    assert usage.requests == usage.calls == len(server.bodies) == len(QUESTIONS)
    assert (usage.retries, usage.resubmissions, usage.cut_short) == (0, 0, 0)


@pytest.mark.parametrize(("mode", "cut_short", "unparsed"), [("length", 4, 4), ("garbled", 0, 4)])
def test_answers_ended_at_max_tokens_and_replies_left_unparsed_are_counted(standin, mode, cut_short, unparsed):
    """The proxy halves the last four replies (`{"answer"` is left, which parses into no answer): "length" marks them
    ended at max_tokens, "garbled" as stopped."""
    server = standin()
    proxy = CuttingProxy(server.api_base, mode, cut_after=2)
    try:
        _, usage = run(ModelSettings(api_base=proxy.api_base, num_retries=0), QUESTIONS)
    finally:
        proxy.close()
    assert proxy.completions == usage.requests == len(QUESTIONS)
    assert (usage.cut_short, usage.unparsed) == (cut_short, unparsed)
    metrics = usage.as_metrics("m_")
    assert (metrics["m_lm_cut_short"], metrics["m_lm_unparsed"]) == (cut_short, unparsed)


def test_a_broken_connection_is_retried_and_the_retries_are_counted_apart(standin):
    server = standin(hang_ups=2)
    _, usage = run(ModelSettings(api_base=server.api_base, num_retries=2), QUESTIONS)
    assert usage.requests + usage.retries == len(server.bodies) == len(QUESTIONS) + 2
    assert (usage.requests, usage.retries, usage.calls) == (len(QUESTIONS), 2, len(QUESTIONS))


def test_a_timeout_is_not_retried(standin):
    server = standin(delay_s=3.0)
    _answers, usage = run(ModelSettings(api_base=server.api_base, timeout_s=0.5, num_retries=2), QUESTIONS[:1], 1)
    assert (usage.requests, usage.retries, usage.calls) == (1, 0, 0)
    assert len(server.bodies) == 1


def test_a_call_made_again_while_its_request_waits_is_answered_by_that_request(standin):
    """As DSPy's thread pools resubmit a slow call: two threads make the same call while the first one waits."""
    server = standin(delay_s=1.0)
    answers, usage = run(ModelSettings(api_base=server.api_base), [QUESTIONS[0], QUESTIONS[0]])
    assert [answer.answer for answer in answers[0]] == ["hi", "hi"]
    assert len(server.bodies) == usage.requests == usage.calls == 1  # its tokens are the request's
    assert usage.resubmissions == 1
