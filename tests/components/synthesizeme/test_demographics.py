"""The demographics method without a model server: its judge, its users, and its errors before any model call."""

import json
import logging

import dspy
import pytest
from dspy.utils.dummies import DummyLM

import prefcraft
from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme.evaluation import (
    DEMOGRAPHICS_HEADING,
    evaluate_methods,
    judge_for,
    select_judged,
)
from prefcraft.components.synthesizeme.options import EvaluateOptions
from prefcraft.errors import ConfigError
from prefcraft.programs.judge import ProfileJudge
from prefcraft.registry import COMPONENTS
from prefcraft.runner import open_step_run
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker

PROFILE = "Age: 25-34 years old\nGender: Female\nLiving Country: United Kingdom"


@pytest.fixture
def data(tmp_path, user_with):
    users = [user_with(2, 1, user_id="u1"), user_with(2, 1, user_id="u2")]
    rows = [pair.model_dump() for user in users for pair in user.train + user.val + user.test]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def demographics(data, profiles):
    """The baseline and demographics methods on `data` (results beside it), with the demographic `profiles` given by
    user id: their options, and what the step judges."""
    options = EvaluateOptions(data=str(data), methods=["baseline", "demographics"], output_dir=data.parent / "results")
    return options, select_judged(options, options.methods, {}, profiles)


def test_the_judge_is_dong_et_als_told_the_users_profile_and_answers_as_the_other_judges(user_with):
    judge = judge_for("demographics", user_with(1, 0), None, PROFILE)
    assert isinstance(judge, ProfileJudge) and judge.profile == PROFILE
    lm = DummyLM([{"choice": "B", "certainty": "70"}])
    with dspy.context(lm=lm):
        prediction = judge(conversation="[user]: hi", first_completion="Hello.", second_completion="Hi there!")
    assert (prediction.preference, prediction.certainty) == ("Second", 70)
    sent = lm.history[0]["messages"][-1]["content"]
    assert PROFILE in sent and "Hello." in sent and "reasoning" not in sent


def test_the_chain_of_thought_judge_with_the_profile_in_its_instructions_is_an_option(user_with):
    judge = judge_for("demographics", user_with(1, 0), None, PROFILE, demographics_judge="persona_judge")
    instructions = judge.judge.predict.signature.instructions
    assert f"{DEMOGRAPHICS_HEADING}:\n===\n{PROFILE}\n===" in instructions


@pytest.mark.parametrize("profiles", [{}, {"someone_else": PROFILE}])
def test_demographics_without_profiles_fails_before_any_model_call(data, profiles):
    with pytest.raises(ConfigError, match="no demographic profile") as caught:
        demographics(data, profiles)  # what the step reads before its model session (`load_evaluated`)
    assert "--demographics" in caught.value.hint and "demographics=" in caught.value.hint


def test_demographics_without_a_survey_fails_before_any_model_call(no_models, data):
    with pytest.raises(ConfigError, match="no demographic profile"):
        prefcraft.evaluate(Settings(), data=data, methods=["baseline", "demographics"])


def test_users_without_a_profile_are_left_out_of_demographics_only(offline, tracker, data, caplog):
    with caplog.at_level(logging.WARNING):
        options, selection = demographics(data, {"u1": PROFILE})
        run = StepRun(Settings(), Settings(), StepTracker(tracker), print, selection)
        with open_step_run(COMPONENTS["synthesizeme"], tracker, "evaluate", options, run):
            outcomes = evaluate_methods(run, options, selection)
    assert list(outcomes["baseline"].report.per_user) == ["u1", "u2"]
    assert list(outcomes["demographics"].report.per_user) == ["u1"]
    [warning] = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert "no demographic profile for 1 user(s), left out of demographics: ['u2']" in warning
    baseline_judge, demographics_judge = offline["u1"]
    assert PROFILE not in baseline_judge and PROFILE in demographics_judge
    assert tracker.named("evaluate").params["methods"] == "baseline,demographics"
    assert tracker.named("evaluate").metrics["demographics_users"] == 1


def test_the_python_api_runs_the_demographics_method_from_a_survey_file(offline, data, tmp_path):
    survey = tmp_path / "survey.jsonl"
    survey.write_text(json.dumps({"user_id": "u1", "age": "25-34 years old", "gender": "Female"}) + "\n")
    outcomes = prefcraft.evaluate(Settings(), data=data, methods=["baseline", "demographics"], demographics=survey,
                                  fitted_dir=tmp_path / "fitted", output_dir=tmp_path / "results")
    assert list(outcomes["demographics"].report.per_user) == ["u1"]
    assert "Age: 25-34 years old\nGender: Female" in offline["u1"][1]
