"""Best of n with a user's judge and the judge as a GRPO reward, on scripted judges: calls per tournament, both orders,
ties, failed calls, and TRL's shapes of prompts and completions."""

import json

import dspy
import pytest
from dspy.utils.dummies import DummyLM

import prefcraft
from prefcraft.commands.main import main
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.components.synthesizeme.rerank import best_of_n, reward_function
from prefcraft.errors import ServerUnreachableError
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge

CANDIDATES = ["aa", "a", "aaaa", "aaa"]


class ShortestWins:
    """A position-free judge that prefers the shorter response, counting its calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, conversation, first, second):
        self.calls.append((conversation, first, second))
        return "First" if len(first) <= len(second) else "Second"


def always_first(conversation, first, second):
    return "First"


@pytest.mark.parametrize(("tournament", "calls"), [("round_robin", 12), ("knockout", 6)])
def test_both_tournaments_find_the_preferred_response_with_their_call_counts(tournament, calls):
    judge = ShortestWins()
    choice = best_of_n(judge, "Say hi.", CANDIDATES, tournament)
    assert choice.best == 1 and choice.calls == len(judge.calls) == calls and choice.failed == 0
    assert {(first, second) for _, first, second in judge.calls} >= {("aa", "a"), ("a", "aa")}  # both orders


def test_round_robin_counts_every_order_won():
    assert best_of_n(ShortestWins(), "Say hi.", CANDIDATES).wins == [4, 6, 0, 2]


def test_a_judge_biased_to_one_position_decides_nothing_and_the_earliest_stays():
    for tournament in ("round_robin", "knockout"):
        assert best_of_n(always_first, "Say hi.", CANDIDATES, tournament).best == 0


def test_a_failed_or_unparseable_call_counts_for_neither_response():
    replies = iter(["Second", ValueError("unparseable"), "Neither", "Second"])

    def flaky(conversation, first, second):
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply

    choice = best_of_n(flaky, "Say hi.", ["x", "y"], "round_robin")
    assert (choice.best, choice.wins, choice.calls, choice.failed) == (1, [0, 1], 2, 1)
    choice = best_of_n(flaky, "Say hi.", ["x", "y"], "knockout")
    assert (choice.best, choice.wins, choice.failed) == (0, [1, 0], 1)  # "Neither", then x in the second order


def test_a_server_that_died_stops_the_choice():
    def dead(conversation, first, second):
        raise ServerUnreachableError("http://127.0.0.1:9/v1", "connection refused")

    with pytest.raises(ServerUnreachableError):
        best_of_n(dead, "Say hi.", ["x", "y"])


def test_one_candidate_needs_no_call_and_none_is_an_error():
    assert best_of_n(ShortestWins(), "Say hi.", ["only"]).calls == 0
    with pytest.raises(ValueError, match="at least one candidate"):
        best_of_n(ShortestWins(), "Say hi.", [])
    with pytest.raises(ValueError, match="unknown tournament 'swiss'"):
        best_of_n(ShortestWins(), "Say hi.", CANDIDATES, "swiss")


def test_the_reward_scores_each_completion_against_its_reference_in_both_orders():
    reward = reward_function(ShortestWins())
    assert reward.__name__ == "personal_judge_reward"
    prompts = ["Say hi.", [{"role": "user", "content": "Say bye."}]]
    completions = ["a", [{"role": "assistant", "content": "bye bye"}]]
    assert reward(prompts, completions, reference=["hello", "bye"]) == [1.0, 0.0]
    assert reward(["Say hi."], ["aa"], reference=["aa"]) == [0.5]  # a tie: the first position wins each order
    assert reward_function(always_first)(["Say hi."], ["a"], reference=["b"]) == [0.5]


def test_the_reward_names_the_column_it_needs():
    with pytest.raises(ValueError, match=r"dataset column 'reference'.*passed completion_ids"):
        reward_function(ShortestWins())(["p"], ["c"], completion_ids=[[1]])


def test_the_api_reranks_with_a_loaded_judge(tmp_path):
    path = save_compiled(PreferenceJudge("Likes short answers."), tmp_path / "u1.json", program_name=PERSONAL_JUDGE,
                         user_id="u1", persona="Likes short answers.")
    judge = prefcraft.load_judge(path)
    with dspy.context(lm=DummyLM([{"reasoning": "Shorter.", "preference": "Second"}] * 8)):
        choice = prefcraft.best_of_n(judge, "How do I boil an egg?", ["Long answer.", "Short."], "knockout")
        rewards = prefcraft.judge_reward(judge)(["How do I boil an egg?"], ["Short."], reference=["Long answer."])
    assert (choice.best, choice.calls, choice.wins) == (0, 2, [1, 1])  # "Second" both times: position, no preference
    assert rewards == [0.5]


@pytest.mark.server
def test_the_command_writes_each_request_s_choice(embedded_server, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    save_compiled(PreferenceJudge("Likes short answers."), tmp_path / "u1.json", program_name=PERSONAL_JUDGE,
                  user_id="u1", persona="Likes short answers.")
    requests = [{"conversation": "How do I boil an egg?", "candidates": ["Boil it.", "Boil it for nine minutes."]},
                {"conversation": [{"role": "user", "content": "Dinner idea?"}], "candidates": ["Pasta.", "Soup.",
                                                                                              "Rice."]}]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(request) + "\n" for request in requests))
    flags = ["--no-serve", "--task-api-base", embedded_server.base_url, "--task-max-tokens", "256",
             "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", "--cache-dir", str(tmp_path / "cache")]
    assert main(["synthesizeme", "best-of-n", "--judge-file", "u1.json", "--requests", "requests.jsonl",
                 "--tournament", "knockout", *flags]) == 0
    rows = [json.loads(line) for line in (tmp_path / "runs" / "best_of_n.jsonl").read_text().splitlines()]
    assert [row["calls"] for row in rows] == [2, 4]
    assert [row["response"] for row in rows] == [request["candidates"][row["best"]] for row, request in
                                                  zip(rows, requests, strict=True)]
    assert "2 requests, 6 judge calls (3.0 per choice" in capsys.readouterr().out


def test_a_bad_request_names_its_row_and_field(tmp_path):
    from prefcraft.components.synthesizeme.best_of_n import load_requests
    from prefcraft.components.synthesizeme.options import BestOfNOptions
    from prefcraft.errors import DataError

    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps({"conversation": "Hi", "candidates": ["a"]}) + "\n"
                    + json.dumps({"conversation": "Hi", "candidates": []}) + "\n")
    with pytest.raises(DataError, match=r"requests.jsonl, row 1, field 'candidates'"):
        load_requests(BestOfNOptions(judge_file=tmp_path / "u1.json", requests=path))
