"""A user's fitted judge as `fit` saved it, ready to ask which of two responses its user prefers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prefcraft.components.synthesizeme.evaluation import load_personal_judge
from prefcraft.loaders.personal_reward_bench import as_conversation_text
from prefcraft.programs.judge import PreferenceJudge

Conversation = str | Sequence[Mapping[str, str]]
"""One user message, or the messages so far as {"role": ..., "content": ...}."""


@dataclass
class PersonalJudge:
    """A user's fitted judge (`program`) and its compiled JSON's metadata (user, persona, scores, the fit's record)."""

    program: PreferenceJudge
    metadata: dict[str, Any]

    @property
    def persona(self) -> str:
        return str(self.metadata["persona"])

    def prefers(self, conversation: Conversation, first: str, second: str) -> Literal["First", "Second"]:
        """Which response this judge's user is predicted to prefer. Runs on the LM of the current dspy context (inside
        `prefcraft.models()`, the task model)."""
        prediction = self.program(
            conversation=as_conversation_text(conversation), first_completion=first, second_completion=second
        )
        return prediction.preference


def load_judge(path: str | Path) -> PersonalJudge:
    """The judge `fit` (or `prefcraft synthesizeme fit`) saved at `path`, a file or a model URI."""
    program, metadata = load_personal_judge(path)
    return PersonalJudge(program, metadata)
