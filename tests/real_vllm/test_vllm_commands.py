"""On a real vLLM serving the bundled SmolLM2, through the compact `vllm` dialect: the smallest evaluation-like
command of every component and the smallest MIPROv2 compile finish, and the requests prefcraft counts are the
requests the server completed, as are the replies it ended at max_tokens. With -s, each command's figures are
printed as one line of a table (the closing note of the vLLM work quotes it)."""

import time
from collections.abc import Iterator

import pytest
from fault_commands import flags, parent_runs
from sensebench_files import write_dialogues
from test_compile_cost import OPTIMIZER
from test_failure_matrix import argv
from test_request_counting_components import COMMANDS

from prefcraft.backends.counters import read_served_requests
from prefcraft.commands.main import main
from prefcraft.engine.usage import LMUsage, metered

pytestmark = pytest.mark.vllm

COMPILE = ["cupid", "compile", "--max-instances", "1", *OPTIMIZER, "--output", "compiled/program.json"]
VLLM_DIALECT = ("--task-structured-output", "vllm")


@pytest.fixture(scope="module")
def table() -> Iterator[list[str]]:
    rows: list[str] = []
    yield rows
    print(f"\n{'command':<24}{'LM calls':>9}{'requests':>9}{'served':>8}{'cut short':>10}{'unparsed':>9}"
          f"{'parsed':>8}{'compl. tok/call':>16}{'wall s':>8}")
    print("\n".join(rows))


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_dialogues(tmp_path)
    return tmp_path


def run_served(command: list[str], workdir, server, table) -> LMUsage:
    """`command` against `server` in `workdir`; checks that prefcraft counted what the server completed."""
    before = read_served_requests(server.base_url)
    started = time.monotonic()
    with metered() as meter:
        status = main([*command, *flags(workdir, server.base_url), *VLLM_DIALECT])
    wall_s = time.monotonic() - started
    served = read_served_requests(server.base_url) - before
    usage = meter.usage
    parsed = 1 - usage.unparsed / usage.calls if usage.calls else 0.0
    table.append(f"{' '.join(command[:2]):<24}{usage.calls:>9}{usage.requests + usage.retries:>9}{served.finished:>8}"
                 f"{usage.cut_short:>10}{usage.unparsed:>9}{parsed:>8.1%}"
                 f"{usage.completion_tokens / max(usage.calls, 1):>16.1f}{wall_s:>8.1f}")
    assert status == 0 or (status == 1 and usage.unparsed + usage.cut_short > 0)  # 1: items failed (cut replies)
    assert usage.requests + usage.retries == served.finished > 0
    assert usage.cut_short == served.cut_short
    assert usage.completion_tokens == served.generation_tokens
    return usage


@pytest.mark.parametrize("step", COMMANDS)
def test_the_smallest_evaluation_finishes_and_counts_what_the_server_served(step, vllm_server, workdir, table):
    usage = run_served(argv(step), workdir, vllm_server, table)
    # With the small-model profile on (it follows the bundled model onto vLLM), a reply fails to parse only when the
    # server cut it at max_tokens: the 135M model repeating itself inside a field, not a reply the adapter misread.
    assert usage.unparsed <= usage.cut_short


def test_the_smallest_miprov2_compile_finishes_and_counts_what_the_server_served(vllm_server, workdir, table):
    run_served(COMPILE, workdir, vllm_server, table)
    [run] = parent_runs(workdir)
    assert (run.info.run_name, run.info.status, run.data.params["name"]) == (
        "cupid-compile", "FINISHED", "miprov2")
