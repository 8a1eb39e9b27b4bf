"""What a long run keeps per call stays bounded: DSPy's call histories keep the last HISTORY_ENTRIES calls, and an
evaluation's calls (the warm-up's too) leave nothing in the caller's trace, and programs run on a model keep no trace
in DSPy's global settings, from whatever thread they run (an optimizer that needs one opens its own); a metered block
keeps its calls' usage as totals."""

import contextvars
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import dspy
from dspy.clients.base_lm import GLOBAL_HISTORY
from dspy.utils import DummyLM

import prefcraft.engine.lm
from prefcraft.engine.evaluation import evaluate_program
from prefcraft.engine.lm import build_lm
from prefcraft.engine.session import program_context
from prefcraft.engine.usage import metered
from prefcraft.settings import ModelSettings


def test_the_histories_keep_the_last_calls(monkeypatch):
    monkeypatch.setattr(prefcraft.engine.lm, "HISTORY_ENTRIES", 3)
    lm = build_lm(ModelSettings(api_base="http://127.0.0.1:1/v1"))
    caller = dspy.Predict("question -> answer")
    with dspy.context(caller_modules=[caller]):
        for number in range(5):
            lm.update_history({"call": number})
    assert [entry["call"] for entry in lm.history] == [2, 3, 4]
    assert [entry["call"] for entry in caller.history] == [2, 3, 4]
    assert [entry.get("call") for entry in GLOBAL_HISTORY] == [2, 3, 4]


def test_an_evaluation_leaves_nothing_in_the_callers_trace():
    examples = [dspy.Example(question=f"q{index}", answer="a").with_inputs("question") for index in range(3)]
    caller_trace: list = []
    with dspy.context(lm=DummyLM([{"answer": "a"}] * 4), trace=caller_trace):
        results, _ = evaluate_program(dspy.Predict("question -> answer"), examples,
                                      lambda example, prediction, trace=None: 1.0,
                                      model=ModelSettings(), num_threads=2, progress=False)
    assert [score for _, _, score in results] == [1.0, 1.0, 1.0]
    assert caller_trace == []


@contextmanager
def _on_a_model(answers: int) -> Iterator[None]:
    """A model's context as every step opens one, its LM answering `answers` calls."""
    with program_context(ModelSettings(api_base="http://127.0.0.1:1/v1"), None):
        with dspy.context(lm=DummyLM([{"answer": "a"}] * answers), adapter=dspy.ChatAdapter()):
            yield


def test_programs_on_a_model_keep_no_trace_in_any_thread():
    kept = dspy.settings.trace  # DSPy's own list, in its global settings
    kept_before = len(kept)
    predict = dspy.Predict("question -> answer")
    with _on_a_model(2):
        predict(question="here")
        context = contextvars.copy_context()  # as candidate_search's threads run each call
        with ThreadPoolExecutor(1) as pool:
            pool.submit(context.run, predict, question="in a thread").result()
        assert dspy.settings.trace is None
    assert dspy.settings.trace is kept and len(kept) == kept_before


def test_an_optimizer_still_traces_what_it_bootstraps():
    trainset = [dspy.Example(question=f"q{index}", answer="a").with_inputs("question") for index in range(2)]
    with _on_a_model(4):
        compiled = dspy.BootstrapFewShot(metric=lambda example, prediction, trace=None: True,
                                         max_bootstrapped_demos=2, max_labeled_demos=0).compile(
            dspy.Predict("question -> answer"), trainset=trainset)
    assert len(compiled.demos) == 2


def test_metered_blocks_keep_totals_not_an_entry_per_call():
    def call(tokens: int) -> None:
        dspy.settings.usage_tracker.add_usage("m", {"prompt_tokens": tokens, "completion_tokens": 1})

    with dspy.track_usage() as outside, metered() as outer:
        with metered() as inner:
            for _ in range(1000):
                call(2)
            with dspy.track_usage():  # DSPy's own block hands its entries up as they are
                call(5)
        call(3)
        tracker = dspy.settings.usage_tracker
        assert not tracker.usage_data and tracker.totals["m"].calls == 1002
    assert (inner.usage.calls, inner.usage.prompt_tokens, inner.usage.completion_tokens) == (1001, 2005, 1001)
    assert (outer.usage.calls, outer.usage.prompt_tokens) == (1002, 2008)
    assert outside.get_total_tokens()["m"]["prompt_tokens"] == 2008 and len(outside.usage_data["m"]) == 1
