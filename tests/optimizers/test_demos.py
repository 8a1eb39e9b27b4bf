"""Demos cut down to what the prompt shows: the signature's fields, and only demos with an input and an output."""

import dspy

from prefcraft.engine.adapter import SchemaAdapter
from prefcraft.optimizers.demos import keep_prompt_demos, reaches_prompt


class Plan(dspy.Signature):
    """Plan the answer."""

    question: str = dspy.InputField()
    plan: str = dspy.OutputField()


class Answer(dspy.Signature):
    """Answer with the plan."""

    question: str = dspy.InputField()
    plan: str = dspy.InputField()
    answer: str = dspy.OutputField()


class PlanThenAnswer(dspy.Module):
    def __init__(self):
        super().__init__()
        self.plan = dspy.Predict(Plan)
        self.answer = dspy.Predict(Answer)


def test_a_labeled_demo_without_an_output_field_is_dropped_and_one_with_it_keeps_only_signature_fields():
    program = PlanThenAnswer()
    # A training example as DSPy places it: the program's input, gold under the answerer's output name, an id.
    example = dspy.Example(id="q1", question="How?", answer="Like this.", rubric=["a"]).with_inputs("question")
    bootstrapped = dspy.Example(augmented=True, question="Why?", plan="Say why.")
    program.plan.demos = [bootstrapped, example]
    program.answer.demos = [example]
    keep_prompt_demos(program)
    assert [dict(demo) for demo in program.plan.demos] == [{"question": "Why?", "plan": "Say why.", "augmented": True}]
    assert [dict(demo) for demo in program.answer.demos] == [{"question": "How?", "answer": "Like this."}]


def test_what_is_kept_is_what_the_adapter_renders():
    demos = [dspy.Example(question="How?", plan="p"), dspy.Example(question="How?"), dspy.Example(plan="p")]
    assert [reaches_prompt(demo, Plan) for demo in demos] == [True, False, False]
    messages = SchemaAdapter().format(Plan, demos, {"question": "Now?"})
    assert len(messages) == 2 + 2  # system, the one renderable demo as a user/assistant pair, the input
