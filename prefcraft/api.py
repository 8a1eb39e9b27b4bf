"""prefcraft from Python: fit users, load a fitted judge and ask it which response its user prefers, evaluate methods.

Models come from `Settings` (default: the embedded model). `models(settings)` reaches them, starting the embedded
server when a model has no `api_base` and stopping it when the block ends; judges called inside the block run on the
task model. `fit` and `evaluate` are `prefcraft fit` and `prefcraft evaluate`: give them the settings the block
yields and they use its server (without, each starts its own).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prefcraft.components.synthesizeme.evaluation import MethodOutcome, evaluate_methods, load_personal_judge
from prefcraft.components.synthesizeme.fit import FitSummary, default_persona_prompt, fit_users
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.executors import Executor
from prefcraft.loaders.personal_reward_bench import Message, format_conversation
from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings

Conversation = str | Sequence[Mapping[str, str]]
"""One user message, or the messages so far as {"role": ..., "content": ...}."""

DEFAULT_FITTED_DIR = Path("runs/fitted")
DEFAULT_RESULTS_DIR = Path("runs/latest")  # as `prefcraft evaluate --output-dir`


@contextmanager
def models(settings: Settings | None = None) -> Iterator[Settings]:
    """Yields `settings` with every model reachable; judges called inside the block run on the task model."""
    with model_session(settings or Settings()) as session, lm_context(session, "task"):
        yield session


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
        `models()`, the task model)."""
        prediction = self.program(
            conversation=_as_text(conversation), first_completion=first, second_completion=second
        )
        return prediction.preference


def load_judge(path: str | Path) -> PersonalJudge:
    """The judge `fit` (or `prefcraft fit`) saved at `path`."""
    program, metadata = load_personal_judge(Path(path))
    return PersonalJudge(program, metadata)


def fit(
    settings: Settings | None = None, *, data: str | Path = SAMPLE_USERS, users: Sequence[str] | None = None,
    fitted_dir: str | Path = DEFAULT_FITTED_DIR, persona_prompt: str | Path | None = None,
    config: SynthesizeMeConfig | None = None, executor: Executor = "local", address: str | None = None,
) -> FitSummary:
    """Fit a SynthesizeMe judge for each user of `data` (default: all) into `fitted_dir/<user>.json`, skipping users
    fitted before with the same data, model and settings. Without `persona_prompt`, the one prefcraft ships for the
    task model; without `config`, the paper's search (n = m = 10). `executor="ray"` fits each user as a Ray task on
    the cluster at `address` (`prefcraft fit --executor ray --address ...`)."""
    settings = settings or Settings()
    prompt = Path(persona_prompt) if persona_prompt else default_persona_prompt(settings.task.model)
    return fit_users(settings, data, Path(fitted_dir), users=users, persona_prompt=prompt, config=config,
                     executor=executor, address=address)


def evaluate(
    settings: Settings | None = None, *, data: str | Path = SAMPLE_USERS, methods: Sequence[str] = ("default",),
    users: Sequence[str] | None = None, fitted_dir: str | Path = DEFAULT_FITTED_DIR, split: str = "test",
    output_dir: str | Path = DEFAULT_RESULTS_DIR, executor: Executor = "local", address: str | None = None,
) -> dict[str, MethodOutcome]:
    """Judge each user's `split` pairs in both orders with every method (`default`, `memory`, and from the judges in
    `fitted_dir`: `demos`, `persona`, `synthesizeme`); each outcome's `report` holds accuracy with its interval.
    Each method's judgments are written to `output_dir/judgments-<method>.jsonl` as soon as it is done, as
    `prefcraft evaluate` writes them: a failure later keeps them, and a rerun repeats no answered call (DSPy's cache).
    `executor="ray"` judges each user and method as a Ray task on the cluster at `address`."""
    fitted = {path.stem: path for path in sorted(Path(fitted_dir).glob("*.json"))}
    return evaluate_methods(settings or Settings(), data, methods=methods, users=users, split=split, fitted=fitted,
                            output_dir=Path(output_dir), executor=executor, address=address)


def _as_text(conversation: Conversation) -> str:
    """The conversation as the judge was fitted on it (`format_conversation`)."""
    if isinstance(conversation, str):
        return format_conversation([Message(role="user", content=conversation)])
    return format_conversation(Message.model_validate(message) for message in conversation)
