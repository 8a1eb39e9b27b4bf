"""What a long run keeps per call stays bounded: DSPy's call histories keep the last HISTORY_ENTRIES calls, and an
evaluation's calls (the warm-up's too) leave nothing in the caller's trace."""

import dspy
from dspy.clients.base_lm import GLOBAL_HISTORY
from dspy.utils import DummyLM

import prefcraft.engine.lm
from prefcraft.engine.evaluation import evaluate_program
from prefcraft.engine.lm import build_lm
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
