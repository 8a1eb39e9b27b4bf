"""Each structured-output dialect on real signatures against a real vLLM that prefcraft started: the replies parse
into the signatures' types, and the compact `vllm` dialect's carry no free whitespace."""

import dspy
import pytest
from test_adapter import CONVERSATION, GradeAnswer, ListTopics, Menu, PlanMenu

from prefcraft.engine.adapter import LengthBounds, SchemaAdapter, has_free_whitespace
from prefcraft.engine.lm import build_lm
from prefcraft.engine.routing import CompactReplies
from prefcraft.settings import ModelSettings
from prefcraft.signatures.judge import JudgePreference

pytestmark = pytest.mark.vllm

CALLS = {
    "judge": (dspy.ChainOfThought(JudgePreference), {"conversation": CONVERSATION, "first_completion": "Paris.",
                                                     "second_completion": "The capital of France is Berlin."}),
    "list": (dspy.Predict(ListTopics), {"text": "I baked sourdough bread and went hiking."}),
    "grade": (dspy.Predict(GradeAnswer), {"question": "What is 2 + 2?", "answer": "4"}),
    "nested": (dspy.ChainOfThought(PlanMenu), {"occasion": "a birthday dinner"}),
}


@pytest.mark.parametrize("dialect", ["json_schema", "vllm"])
@pytest.mark.parametrize("call", CALLS)
def test_replies_parse_and_the_compact_dialect_is_compact(vllm_server, dialect, call, monkeypatch, caplog):
    monkeypatch.setattr(CompactReplies, "warned", set())
    model = ModelSettings(api_base=vllm_server.base_url, max_tokens=256, structured_output=dialect)
    lm = build_lm(model)
    program, inputs = CALLS[call]
    with dspy.context(lm=lm, adapter=SchemaAdapter(dialect=dialect, bounds=LengthBounds(120, 3))):
        prediction = program(**inputs)
    [reply] = lm.history[-1]["outputs"]
    if call == "judge":
        assert prediction.preference in ("First", "Second")
    elif call == "list":
        assert all(isinstance(topic, str) for topic in prediction.topics) and len(prediction.topics) <= 3
    elif call == "grade":
        assert prediction.grade in (1, 2, 3, 4, 5)
    else:
        assert isinstance(prediction.menu, Menu) and len(prediction.menu.title) <= 120
    if dialect == "vllm":
        assert not has_free_whitespace(reply), reply
        assert reply.startswith("{") and ('": ' in reply)  # the layout asked for: one space after each colon
        assert "ignores the compact JSON" not in caplog.text
