"""Faults against the real embedded server, through a proxy that dies, stalls or corrupts replies.

In each case the command ends with a clear message or a counted failure, the MLflow run says what happened, results
already computed stay on disk, and running the same command again with `--resume` continues the failed run and
repeats no LM call that had completed.
"""

import json

import dspy
import pytest
from fault_commands import assert_one_unreachable_line, flags, parent_runs
from fault_proxy import fault_proxy

from prefcraft.commands.main import main

pytestmark = pytest.mark.server


def test_a_server_dying_mid_evaluation_is_one_error_and_the_rerun_repeats_no_completed_call(
    embedded_server, tmp_path, capsys
):
    results = tmp_path / "results"
    evaluate = ["synthesizeme", "evaluate", "--users", "sample_user_01", "--output-dir", str(results)]
    with fault_proxy(embedded_server.base_url, die_after=3) as proxy:
        assert main([*evaluate, *flags(tmp_path, proxy.base_url)]) == 2
        assert_one_unreachable_line(capsys.readouterr().err, proxy.base_url)
        assert [run.info.status for run in parent_runs(tmp_path)] == ["FAILED"]
        before = list(proxy.answered)
        assert len(before) >= 3

        proxy.heal()
        proxy.answered.clear()
        assert main([*evaluate, "--resume", *flags(tmp_path, proxy.base_url)]) == 0
        assert not set(before) & set(proxy.answered), "a completed call was sent again"
        assert len(set(before) | set(proxy.answered)) == 8  # 4 test pairs, both orders
    assert len((results / "judgments-baseline.jsonl").read_text().splitlines()) == 8
    assert_resumed_once(parent_runs(tmp_path))


def test_a_server_dying_mid_fit_keeps_fitted_users_and_the_rerun_repeats_no_completed_call(
    embedded_server, tmp_path, user_with, capsys
):
    data = tmp_path / "pairs.jsonl"
    users = [user_with(3, 2, short_wins=True, user_id="a_short_fan"), user_with(3, 2, short_wins=False,
                                                                             user_id="b_long_fan")]
    data.write_text("".join(json.dumps(p.model_dump()) + "\n" for u in users for p in u.train + u.val + u.test))
    fit = ["synthesizeme", "fit", "--data", str(data), "--fitted-dir", str(tmp_path / "fitted"), "--subsets", "2",
           "--demo-candidates", "2"]
    with fault_proxy(embedded_server.base_url, die_after=25) as proxy:  # the two fits take about twice that
        assert main([*fit, *flags(tmp_path, proxy.base_url)]) == 2
        assert "is unreachable" in capsys.readouterr().err
        before = list(proxy.answered)
        fitted_before = sorted(path.name for path in (tmp_path / "fitted").glob("*.json"))
        proxy.heal()
        proxy.answered.clear()
        assert main([*fit, "--resume", *flags(tmp_path, proxy.base_url)]) == 0
        assert f"resumed {len(fitted_before)}" in capsys.readouterr().out
        assert not set(before) & set(proxy.answered), "a completed call was sent again"
    assert sorted(path.name for path in (tmp_path / "fitted").glob("*.json")) == ["a_short_fan.json", "b_long_fan.json"]
    assert_resumed_once(parent_runs(tmp_path))


def assert_resumed_once(runs) -> None:
    """One run: the failed one, continued by `--resume` to the end."""
    assert [(run.info.status, run.data.tags.get("prefcraft.resumed")) for run in runs] == [("FINISHED", "1")]


def test_a_server_slower_than_the_timeout_is_one_error_and_gets_no_call_twice(embedded_server, tmp_path, capsys):
    evaluate = ["synthesizeme", "evaluate", "--users", "sample_user_02", "--output-dir", str(tmp_path / "results")]
    with fault_proxy(embedded_server.base_url, "slow", delay_s=3) as proxy:
        code = main([*evaluate, *flags(tmp_path, proxy.base_url, "--task-timeout-s", "1")])
    error = capsys.readouterr().err
    assert code == 2
    assert f"a model call timed out at {proxy.base_url} (after 1.0 s)" in error and "Traceback" not in error, error
    assert len(proxy.answered) <= 2  # the requests in flight (2 threads) when the first timed out; none sent again
    assert [run.info.status for run in parent_runs(tmp_path)] == ["FAILED"]


def test_corrupt_replies_are_counted_failures_not_silent_wrong_answers(embedded_server, tmp_path, capsys):
    evaluate = ["synthesizeme", "evaluate", "--users", "sample_user_02", "--output-dir", str(tmp_path / "results")]
    with fault_proxy(embedded_server.base_url, "truncate") as proxy:
        assert main([*evaluate, *flags(tmp_path / "truncated", proxy.base_url)]) == 0
    assert "failed judgments (no answer or unparseable) 8" in capsys.readouterr().out
    metrics = [run.data.metrics for run in parent_runs(tmp_path / "truncated")]
    assert metrics[0]["baseline_parse_failures"] == 8


def test_a_conversation_longer_than_the_context_is_a_counted_failure_and_the_other_pairs_are_judged(
    embedded_model, pair
):
    from prefcraft.engine.evaluation import judge_pairs
    from prefcraft.engine.lm import build_adapter, build_lm
    from prefcraft.programs.judge import PreferenceJudge

    short = pair(0, "test")
    long = short.model_copy(update={"conversation_id": "too-long", "context": (
        short.context[0].model_copy(update={"content": "Tell me everything about eggs. " * 2000}),)})
    with dspy.context(lm=build_lm(embedded_model), adapter=build_adapter(embedded_model)):
        judgments, _ = judge_pairs(PreferenceJudge(), [short, long], model=embedded_model, num_threads=2,
                                   progress=False)
    failed = {judgment.pair_id.split("#")[0] for judgment in judgments if judgment.predicted is None}
    assert failed == {"too-long"}
