"""For one evaluation-like command per component, the HTTP requests prefcraft counts (`metered()`: first attempts and
retries) are the requests a counting stand-in server received; a rerun in the same DSPy cache sends none and counts
none. With `-s`, each command's counts are printed as one line of a table."""

from collections.abc import Iterator

import pytest
from fault_commands import flags
from openai_standin import StandInServer
from sensebench_files import write_dialogues
from test_failure_matrix import argv

from prefcraft.commands.main import main
from prefcraft.engine.usage import LMUsage, metered
from prefcraft.registry import COMPONENTS

COMMANDS = ["synthesizeme evaluate", "sensejudge simulate", "prefdisco evaluate", "cupid evaluate", "lampqa evaluate"]
"""One evaluation-like command per component, each as small as the failure matrix runs it (test_failure_matrix.py)."""
HUNG_UP = "cupid evaluate"
"""The command run again against a server that closes its first request unanswered, as one that restarts."""

COLUMNS = ("command", "requests", "retries", "resubmissions", "received")


@pytest.fixture(scope="module")
def table() -> Iterator[list[tuple[str, LMUsage, int]]]:
    rows: list[tuple[str, LMUsage, int]] = []
    yield rows
    print(f"\n{COLUMNS[0]:<48}" + "".join(f"{column:>14}" for column in COLUMNS[1:]))
    for command, usage, received in rows:
        print(f"{command:<48}{usage.requests:>14}{usage.retries:>14}{usage.resubmissions:>14}{received:>14}")


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_dialogues(tmp_path)
    return tmp_path


def run_counted(step: str, workdir, server: StandInServer) -> LMUsage:
    """`step` against `server`, in `workdir`'s DSPy cache; what prefcraft counted, the server's requests cleared."""
    server.bodies.clear()
    with metered() as meter:
        assert main(argv(step, *flags(workdir, server.api_base))) == 0
    return meter.usage


def test_every_component_has_a_counted_command():
    assert [command.split()[0] for command in COMMANDS] == list(COMPONENTS)


@pytest.mark.parametrize("step", COMMANDS)
def test_the_requests_counted_are_those_received_and_a_rerun_in_the_same_cache_sends_none(step, workdir, table):
    server = StandInServer(numbered=True)  # no two answers alike, as SenseJudge's pairs need
    try:
        usage = run_counted(step, workdir, server)
        table.append((step, usage, len(server.bodies)))
        assert usage.requests + usage.retries == len(server.bodies) > 0
        assert usage.calls <= usage.requests
        rerun = run_counted(step, workdir, server)
        table.append((f"{step} (rerun, same cache)", rerun, len(server.bodies)))
    finally:
        server.close()
    assert (rerun.requests, rerun.retries, len(server.bodies)) == (0, 0, 0)


def test_a_request_the_server_hung_up_on_is_counted_as_a_retry(workdir, table):
    server = StandInServer(numbered=True, hang_ups=1)
    try:
        usage = run_counted(HUNG_UP, workdir, server)
    finally:
        server.close()
    table.append((f"{HUNG_UP} (server hangs up once)", usage, len(server.bodies)))
    assert usage.retries == 1
    assert usage.requests + usage.retries == len(server.bodies)
    assert usage.calls <= usage.requests
