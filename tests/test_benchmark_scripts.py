"""Every benchmark script imports as it runs (benchmarks/ first on the path) and shows its --help without a server, so
that a renamed import or option cannot break one unnoticed: the benchmarks themselves run only by hand."""

import argparse
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme_words import flag_words, words_outside

REPOSITORY = Path(__file__).resolve().parent.parent
BENCHMARKS = REPOSITORY / "benchmarks"
MODULES = sorted(BENCHMARKS.glob("*.py"))
SHARED = {"harness"}
"""Imported by the scripts, not run."""
SCRIPTS = [path for path in MODULES if path.stem not in SHARED]


def test_the_benchmarks_folder_holds_the_scripts():
    assert SHARED <= {path.stem for path in MODULES} and SCRIPTS


@pytest.mark.parametrize("module", MODULES, ids=lambda path: path.stem)
def test_each_module_imports_with_benchmarks_on_the_path(module, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # restored afterwards, with whatever the module adds to the path
    importlib.import_module(module.stem)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_each_script_shows_its_help_without_a_server(script):
    done = subprocess.run([sys.executable, str(script.relative_to(REPOSITORY)), "--help"], cwd=REPOSITORY,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:") and "--output" in done.stdout, done.stdout
    words = flag_words()  # the first spelling of each flag: a later one on its line is a former name
    flags = re.findall(r"(?m)^  (?:-\w, )?(--[a-z0-9-]+)", done.stdout)
    outside = [flag for flag in flags if words_outside(flag, words)]
    assert not outside, f"{script.name}: flags with words outside README's flag words: {outside}"


@pytest.fixture
def structured_outputs(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("structured_outputs")


def test_a_structured_output_variant_reads_its_dialect_and_profile(structured_outputs, tmp_path):
    profile = tmp_path / "bounds.toml"
    profile.write_text('[small_model]\nstring_chars = 100\n[small_model.field_chars]\n"NextTurn.question" = 50\n')
    variant = structured_outputs.parse_variant(f"tight=llguidance:{profile}")
    adapter = variant.adapter()
    assert (variant.label, adapter.dialect, adapter.bounds.string_chars) == ("tight", "llguidance", 100)
    assert adapter.bounds.field_chars["NextTurn.question"] == 50
    assert adapter.bounds.field_chars["ReplyAsUser.reply"] == 120  # the defaults stay under the file's entries
    assert structured_outputs.parse_variant("after=json_schema:default").adapter().bounds.string_chars == 400


@pytest.mark.parametrize(("spec", "message"), [
    ("before=grammar:default", r"variant before: unknown dialect 'grammar'"),
    ("before=json_schema:missing.toml", r"profile missing\.toml: No such file"),
    ("json_schema:default", r"is not LABEL=DIALECT:PROFILE"),
])
def test_a_bad_structured_output_variant_is_one_clear_error(structured_outputs, spec, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        structured_outputs.parse_variant(spec)


def test_a_profile_file_that_is_not_a_profile_is_named(structured_outputs, tmp_path):
    profile = tmp_path / "bounds.toml"
    profile.write_text("[small_model]\nstring_chars = -1\n")
    with pytest.raises(argparse.ArgumentTypeError, match=rf"profile {profile}: not a small-model profile"):
        structured_outputs.parse_variant(f"before=json_schema:{profile}")


def test_field_lengths_count_the_parsed_calls_strings_against_their_bound(structured_outputs):
    def call(failure, *strings):
        return structured_outputs.CallResult(failure, 1.0, 10, 5, strings=list(strings))

    results = [
        call(None, ("NextTurn.question", 120, 120), ("JudgePreference.reasoning", 30, None)),
        call(None, ("NextTurn.question", 60, 120), ("JudgePreference.reasoning", 50, None)),
        call(None, ("NextTurn.question", 114, 120)),
        call("AdapterParseError", ("NextTurn.question", 500, 120)),  # an unparsed call is left out
    ]
    question, reasoning = structured_outputs.field_lengths(results)
    assert question == structured_outputs.FieldLengths("NextTurn.question", 3, 98.0, 120, 120, 2 / 3)
    assert reasoning == structured_outputs.FieldLengths("JudgePreference.reasoning", 2, 40.0, 50, None, None)
    cell = structured_outputs.summarize("after", "NextTurn", results)
    assert cell.field_lengths == [question, reasoning]
    row = "| after / NextTurn | NextTurn.question | 3 | 98 / 120 | 120 | 67% |"
    assert row in structured_outputs.field_table([cell])


def test_the_completion_line_gives_each_adapter_against_the_first(structured_outputs):
    totals = [{"adapter": "before", "calls": 10, "completion_tokens": 880},
              {"adapter": "after", "calls": 10, "completion_tokens": 440}]
    line = structured_outputs.completion_line(totals)
    assert line == "completion tokens per call: before 88.0 (1.00x), after 44.0 (0.50x)"


@pytest.fixture
def replay_workload(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("replay_workload")


def recorded_request(dialect):
    """A request as `record` stores it: the response_format prefcraft's adapter sends for the judge's signature."""
    from prefcraft.engine.lm import build_adapter
    from prefcraft.settings import ModelSettings, SmallModelProfile
    from prefcraft.signatures.judge import JudgePreference

    lm_kwargs = {"max_tokens": 512}
    adapter = build_adapter(ModelSettings(structured_output=dialect), SmallModelProfile())
    adapter._prepare_response_format(None, lm_kwargs, JudgePreference)
    return {"messages": [{"role": "user", "content": "hi"}], "temperature": 0.0, **lm_kwargs}


def test_a_replayed_llguidance_request_sends_its_schema_in_the_grammar_field(replay_workload):
    request = recorded_request("llguidance")
    schema = request["response_format"]["json_schema"]["schema"]
    body = replay_workload.chat_body(request, "m", "xllamacpp")
    assert body == {"model": "m", "messages": request["messages"], "max_tokens": request["max_tokens"],
                    "temperature": 0.0, "grammar": "%llguidance {}\nstart: %json " + json.dumps(schema)}
    assert "response_format" in request  # the stored request is replayed again under the next policy


def test_a_replayed_json_schema_request_keeps_its_response_format(replay_workload):
    request = recorded_request("json_schema")
    assert replay_workload.chat_body(request, "m", "xllamacpp") == {
        "model": "m", "messages": request["messages"], "max_tokens": request["max_tokens"], "temperature": 0.0,
        "response_format": request["response_format"]}


@pytest.fixture
def harness(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("harness")


@pytest.mark.parametrize(("text", "message"), [
    (None, r"No such file"),
    ("string_chars = 100\n", r"no \[small_model\] table"),
    ("[small_model\n", r"not TOML"),
    ("[small_model]\nstring_chars = -1\n", r"not a small-model profile"),
])
def test_a_profile_that_cannot_be_read_is_one_error_naming_its_file(harness, tmp_path, text, message):
    profile = tmp_path / "bounds.toml"
    if text is not None:
        profile.write_text(text)
    with pytest.raises(argparse.ArgumentTypeError, match=rf"^profile {re.escape(str(profile))}: {message}"):
        harness.load_profile(str(profile))


def test_the_default_profile_is_todays(harness):
    from prefcraft.settings import SmallModelProfile

    assert harness.load_profile("default") == SmallModelProfile()


def test_the_profile_benchmark_runs_commands_the_cli_accepts(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from prefcraft.commands.main import make_parser

    profile_off = importlib.import_module("profile_off")
    for component, argv in profile_off.COMMANDS.items():
        sensebench = ["--sensebench", "new_sense_bmk.json"] if component == "sensejudge" else []
        args = make_parser().parse_args([*argv, *sensebench])
        assert (args.command, args.step) == tuple(argv[:2])


def test_the_paper_scale_estimate_prices_every_papers_table_from_the_committed_costs(tmp_path):
    output = tmp_path / "paper_scale_cost.json"
    done = subprocess.run([sys.executable, "benchmarks/paper_scale_cost.py", "--output", str(output)],
                          cwd=REPOSITORY, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    papers = json.loads(output.read_text(encoding="utf-8"))["papers"]
    assert set(papers) == {"synthesizeme-table3", "cupid-main", "lampqa-methods", "prefdisco-conditions",
                           "sensejudge-subsets"}
    for name, paper in papers.items():
        assert f"## {name} " in done.stdout
        assert min(paper["calls"], paper["prompt_tokens"], paper["completion_tokens"]) > 0, name
        assert all(part["calls"] > 0 and part["prompt_tokens"] > 0 for part in paper["parts"]), name
        assert sum(model["calls"] for model in paper["by_model"].values()) == paper["calls"]


@pytest.fixture
def client_overhead(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("client_overhead")


def test_the_scaled_users_are_copies_whose_requests_all_differ(client_overhead, tmp_path):
    data = tmp_path / "users.jsonl"
    pairs = client_overhead.scaled_users(data, copies=3)
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    tests = [row for row in rows if row["split"] == "test"]
    assert pairs == len(tests) == 3 * 48
    assert len({row["user_id"] for row in rows}) == 3 * 12
    judged = {json.dumps([row["context"], row["chosen"], row["rejected"]]) for row in tests}
    assert len(judged) == len(tests)  # no judge call of one copy is another's: the cache starts empty for each


def test_the_plain_client_resends_bodies_to_the_instant_server_which_answers_their_schema(client_overhead):
    schema = {"type": "object", "properties": {"preference": {"enum": ["First", "Second"]}}}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
    server = client_overhead.InstantServer()
    try:
        plain = client_overhead.run_plain(server, [json.dumps(body).encode()] * 6, threads=2)
        import httpx

        reply = httpx.post(f"{server.api_base}/chat/completions", json=body).json()
        _, bodies = server.take()
    finally:
        server.close()
    assert plain["calls"] == 6 and plain["requests_per_s"] > 0
    assert json.loads(reply["choices"][0]["message"]["content"]) == {"preference": "First"}
    assert json.loads(bodies[0]) == body
