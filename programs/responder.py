"""A response model: the task model under a system prompt of its own, so that model variants differ in a known way.

`temperature` (None: the model's setting) samples like a chat model; DSPy's cache still replays each response.
"""

import dspy

from prefcraft.signatures.responder import RespondToUser


class Responder(dspy.Module):
    def __init__(self, system_prompt: str = "", temperature: float | None = None):
        super().__init__()
        self.respond = dspy.Predict(RespondToUser, **({} if temperature is None else {"temperature": temperature}))
        if system_prompt:
            instructions = f"{system_prompt.strip()}\n\n{RespondToUser.instructions}"
            self.respond.signature = RespondToUser.with_instructions(instructions)

    def forward(self, conversation: str) -> dspy.Prediction:
        return self.respond(conversation=conversation)
