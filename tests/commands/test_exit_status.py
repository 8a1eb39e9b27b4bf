"""A command whose items partly failed ran to the end, and its exit status says so: 1, with one line naming how many
failed; 0 when none did. No model: the step's outcome is given."""

from dataclasses import dataclass

import pytest

from prefcraft.commands import main as cli
from prefcraft.components.component import failed_items


@dataclass
class Outcome:
    failed_items: int


def test_failed_items_add_up_over_lists_and_mappings_and_an_outcome_without_them_counts_none():
    assert failed_items(Outcome(2)) == 2
    assert failed_items([Outcome(1), {"baseline": Outcome(3), "memory": object()}, None]) == 4
    assert failed_items(object()) == 0


@pytest.mark.parametrize(("outcome", "status"), [(Outcome(0), 0), ([Outcome(0), Outcome(2)], 1)])
def test_the_exit_status_says_some_items_failed(monkeypatch, capsys, outcome, status):
    monkeypatch.setattr(cli, "run_command", lambda args, settings: outcome)
    assert cli.main(["cupid", "evaluate", "--max-instances", "1"]) == status
    said = capsys.readouterr().err
    assert ("2 item(s) failed and were counted" in said) is (status == 1)
