import dspy
from dspy.utils import DummyLM

from prefcraft.programs.responder import Responder


def test_the_system_prompt_leads_the_instructions_and_temperature_is_sampled_per_call():
    responder = Responder("Answer in one sentence.", temperature=0.7)
    assert responder.respond.signature.instructions.startswith("Answer in one sentence.")
    assert responder.respond.config == {"temperature": 0.7}
    assert Responder().respond.config == {}
    lm = DummyLM([{"response": "Paris."}])
    with dspy.context(lm=lm):
        assert responder(conversation="[user]: Capital of France?").response == "Paris."
    assert "Answer in one sentence." in lm.history[-1]["messages"][0]["content"]
