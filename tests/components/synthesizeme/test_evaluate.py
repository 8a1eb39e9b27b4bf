"""`prefcraft synthesizeme evaluate` without a model server: what it refuses to score, before any model call."""

import json
import logging

import pytest

from prefcraft.commands.main import make_parser
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.components.synthesizeme.options import EvaluateOptions
from prefcraft.errors import ConfigError
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.runner import run_step
from prefcraft.settings import Settings
from prefcraft.tracking.runs import data_digest


@pytest.fixture
def data(tmp_path, user_with):
    user = user_with(2, 1)
    rows = [pair.model_dump() for pair in user.train + user.val + user.test]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def fitted_judge(tmp_path, digest: str) -> dict[str, object]:
    path = save_compiled(PreferenceJudge(), tmp_path / "fitted" / "u1.json", program_name=PERSONAL_JUDGE,
                         user_id="u1", model="m", data_digest=digest, persona="Likes short answers.",
                         record={"evidence_demos": []})
    return {"u1": path}


def evaluate(tmp_path, data, **options):
    """`prefcraft synthesizeme evaluate` on `data` with the fitted judges of `fitted_judge`."""
    options = EvaluateOptions(data=str(data), fitted_dir=tmp_path / "fitted", output_dir=tmp_path / "results",
                              **options)
    return run_step("synthesizeme", "evaluate", options, Settings())


def test_a_judge_fitted_on_other_data_is_refused(no_models, tmp_path, data):
    fitted = fitted_judge(tmp_path, "0123456789abcdef")
    with pytest.raises(ConfigError) as caught:
        evaluate(tmp_path, data, methods=["synthesizeme"])
    message = str(caught.value)
    assert str(fitted["u1"]) in message
    assert "0123456789abcdef" in message and data_digest(data) in message and str(data) in message


@pytest.mark.parametrize("split", ["train", "val"])
@pytest.mark.parametrize("method", ["demos", "persona", "synthesizeme", "memory"])
def test_methods_are_not_scored_on_the_pairs_they_learned_from(no_models, tmp_path, data, split, method):
    fitted_judge(tmp_path, data_digest(data))
    with pytest.raises(ConfigError, match=f"split '{split}'") as caught:
        evaluate(tmp_path, data, methods=["baseline", method], split=split)
    assert "--allow-fitted-pairs" in str(caught.value)


def test_allow_fitted_pairs_scores_them_with_a_warning(offline, tmp_path, data, caplog):
    fitted_judge(tmp_path, data_digest(data))
    with caplog.at_level(logging.WARNING):
        outcomes = evaluate(tmp_path, data, methods=["synthesizeme"], split="val", allow_fitted_pairs=True)
    assert outcomes["synthesizeme"].report.accuracy.n == 1
    assert any("learned from" in record.getMessage() for record in caplog.records)


def test_a_judge_fitted_on_this_data_is_scored_on_its_test_pairs(offline, tracker, tmp_path, data):
    fitted_judge(tmp_path, data_digest(data))
    outcomes = evaluate(tmp_path, data, methods=["baseline", "synthesizeme"])
    assert outcomes["synthesizeme"].report.accuracy.n == 2
    run = tracker.named("evaluate")  # each method's judgments written once, as the file MLflow logs
    assert run.files == [tmp_path / "results" / f"judgments-{method}.jsonl" for method in ("baseline", "synthesizeme")]
    assert run.metrics["synthesizeme_accuracy"] == 1.0 and tracker.named("u1").metrics["baseline_accuracy"] == 1.0


def test_the_baseline_judge_may_be_scored_on_any_split(offline, tmp_path, data):
    assert evaluate(tmp_path, data, split="train")["baseline"].report.accuracy.n == 2


def test_the_evaluate_command_has_the_flag():
    assert make_parser().parse_args(["synthesizeme", "evaluate", "--allow-fitted-pairs"]).allow_fitted_pairs
    assert not make_parser().parse_args(["synthesizeme", "evaluate"]).allow_fitted_pairs
