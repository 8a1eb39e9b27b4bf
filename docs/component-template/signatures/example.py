"""The template component's signature: rename `example` to your component's name. A paper's prompt goes here, in
prefcraft's words, with its fields in the paper's order (a compiled JSON keeps the order: never reorder them)."""

import dspy

from prefcraft.engine.small_model import small_model_bounds


class AnswerRequest(dspy.Signature):
    """Answer the user's request in one or two sentences."""

    request: str = dspy.InputField(desc="what the user asks")
    answer: str = dspy.OutputField(desc="the reply to the user")


# The small-model profile's bounds, declared after the signatures, never inside one (README, "Adding a component").
small_model_bounds(AnswerRequest, chars={"answer": 300})
