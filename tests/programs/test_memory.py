import dspy
from dspy.utils.dummies import DummyLM

from prefcraft.programs.memory import MemoryBuilder

INTERACTION = {"conversation": "[user]: hi"}


def test_insights_are_split_per_line_capped_at_five_and_kept_in_order():
    lm = DummyLM([{"insights": "- likes short replies\n\n* casual tone\n1\n2\n3\n4"}, {"insights": "prefers emoji"}])
    with dspy.context(lm=lm):
        memory = MemoryBuilder()(interactions=[INTERACTION, INTERACTION])
    assert memory.insights == ["likes short replies", "casual tone", "1", "2", "3", "prefers emoji"]
    assert memory.memory.splitlines()[0] == "- likes short replies"
