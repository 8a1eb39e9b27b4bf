"""`prefcraft synthesizeme best-of-n`: a fitted user's judge picks the best of each request's candidate responses
(`rerank.best_of_n`); one result row per request, with the judge calls it took, in the `best-of-n` run the runner
opens (its params `best_of_n_params`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme.options import BestOfNOptions
from prefcraft.components.synthesizeme.personal_judge import load_judge
from prefcraft.components.synthesizeme.rerank import Choice, best_of_n
from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import Message, read_rows


class Request(BaseModel):
    """One line of the requests file: the conversation so far and the candidate responses to choose from."""

    model_config = ConfigDict(extra="ignore")

    conversation: str | list[Message]
    candidates: list[str] = Field(min_length=1)


@dataclass(frozen=True)
class BestOfNOutcome:
    """Each request's choice, the file they were written to, and the calls they took in all."""

    choices: list[Choice]
    output: Path
    tournament: str

    @property
    def calls(self) -> int:
        return sum(choice.calls for choice in self.choices)

    @property
    def failed(self) -> int:
        """Judge calls that gave no preference."""
        return sum(choice.failed for choice in self.choices)


def load_requests(options: BestOfNOptions) -> list[Request]:
    """The requests file's rows, each checked; the first bad one is a DataError naming its row and field."""
    requests = []
    for index, row in enumerate(read_rows(options.requests)):
        try:
            requests.append(Request.model_validate(row))
        except ValidationError as error:
            issue = error.errors()[0]
            raise DataError(options.requests, index, ".".join(str(part) for part in issue["loc"]), issue["msg"],
                            'each line: {"conversation": "..." or [{"role": ..., "content": ...}], '
                            '"candidates": ["...", ...]}') from None
    if not requests:
        raise DataError(options.requests, None, None, "no requests in the file")
    return requests


def best_of_n_params(options: BestOfNOptions, run: StepRun) -> dict[str, Any]:
    """The params of the `best-of-n` run: the judge, the tournament and the requests (`load_requests` read them)."""
    return {"judge_file": str(options.judge_file), "tournament": options.tournament, "requests": len(run.loaded)}


def choose(options: BestOfNOptions, run: StepRun) -> BestOfNOutcome:
    judge = load_judge(options.judge_file)
    choices = []
    for request in run.loaded:
        conversation = request.conversation if isinstance(request.conversation, str) else \
            [message.model_dump() for message in request.conversation]
        choices.append(best_of_n(judge.prefers, conversation, request.candidates, options.tournament))
    rows = [{"request": index, "best": choice.best, "response": request.candidates[choice.best], **asdict(choice)}
            for index, (request, choice) in enumerate(zip(run.loaded, choices, strict=True))]
    outcome = BestOfNOutcome(choices, run.tracker.write_results(options.output, rows), options.tournament)
    run.tracker.log_metrics({"judge_calls": outcome.calls, "judge_calls_failed": outcome.failed})
    return outcome


def format_choices(outcome: BestOfNOutcome) -> str:
    per_choice = outcome.calls / len(outcome.choices)
    return (f"best of n ({outcome.tournament}, both orders): {len(outcome.choices)} requests, {outcome.calls} judge "
            f"calls ({per_choice:.1f} per choice, {outcome.failed} without a preference); choices in {outcome.output}")
