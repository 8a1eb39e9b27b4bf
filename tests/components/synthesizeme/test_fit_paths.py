"""`prefcraft synthesizeme fit` and `evaluate` with hostile user ids, without a model server: a data row's `user_id`
names a file inside the fitted directory and nowhere else, and two users never share one."""

import json
from contextlib import nullcontext
from types import SimpleNamespace
from typing import ClassVar

import pytest

from prefcraft.components.synthesizeme import fit
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.components.synthesizeme.fit import fit_settings
from prefcraft.components.synthesizeme.options import DemoOptions, EvaluateOptions, FitOptions
from prefcraft.optimizers.artifacts import read_metadata, save_compiled
from prefcraft.optimizers.synthesizeme import FitRecord, SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.runner import run_step
from prefcraft.settings import Settings, SmallModelProfile
from prefcraft.tracking.runs import data_digest

# Each would name a file outside (or beside) the fitted directory if it were used as a file name as it is. The
# absolute one is built under the test's own folder (ABSOLUTE), so that a file written there is found and removed.
ABSOLUTE = "<tmp>/abs/path"
HOSTILE = ["../../outside", ABSOLUTE, "..", "a/b", "nul\0byte", "x" * 300]


class FakeFitter:
    """SynthesizeMe without model calls: a judge whose persona names its user. `configs` keeps each fit's config."""

    configs: ClassVar[list[SynthesizeMeConfig]] = []

    def __init__(self, synthesizer, config):
        self.config = config
        self.configs.append(config)

    def compile(self, program, *, trainset, valset):
        user_id = trainset[0].user_id
        program.fit_record = FitRecord(user_id, len(trainset) // 2, len(valset) // 2, 0, f"persona of {user_id}")
        return program


@pytest.fixture
def offline_fit(monkeypatch, tracker):
    """`fit` with no server, no MLflow and no model calls."""
    monkeypatch.setattr(fit, "lm_context", lambda *args: nullcontext())
    monkeypatch.setattr(fit, "metered_prompt_cache", lambda api_base: nullcontext(SimpleNamespace(usage=None)))
    monkeypatch.setattr(fit, "check_reachable", lambda *args: None)
    monkeypatch.setattr(fit, "SynthesizeMe", FakeFitter)
    FakeFitter.configs.clear()


def fit_users(data, fitted_dir, settings=None, **options):
    """`prefcraft synthesizeme fit` of every user of `data` into `fitted_dir`, one thread."""
    options = FitOptions(data=str(data), fitted_dir=fitted_dir, **options)
    return run_step("synthesizeme", "fit", options, settings or Settings(threads=1))


def evaluate_persona(data, fitted_dir, output_dir):
    """`prefcraft synthesizeme evaluate --methods persona` with the judges fitted in `fitted_dir`."""
    options = EvaluateOptions(data=str(data), methods=["persona"], fitted_dir=fitted_dir, output_dir=output_dir)
    return run_step("synthesizeme", "evaluate", options, Settings())


def real_id(user_id, tmp_path):
    return user_id.replace("<tmp>", str(tmp_path))


def write_pairs(path, users, user_with):
    rows = [pair.model_dump() for user_id in users for user in [user_with(2, 1, user_id=user_id)]
            for pair in user.train + user.val + user.test]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def files_under(folder):
    return sorted(path for path in folder.rglob("*") if path.is_file())


@pytest.mark.parametrize("user_id", HOSTILE, ids=["dotdot", "absolute", "parent", "slash", "nul", "long"])
def test_a_hostile_user_id_is_fitted_into_a_file_inside_the_fitted_directory(offline_fit, tracker, tmp_path,
                                                                             user_with, user_id):
    user_id = real_id(user_id, tmp_path)
    data = write_pairs(tmp_path / "pairs.jsonl", ["user123", user_id], user_with)
    out = tmp_path / "work" / "fitted"
    summary = fit_users(data, out)
    assert set(summary.fitted) == {"user123", user_id} and not summary.skipped
    assert tracker.named("fit-synthesizeme").metrics == {"users_fitted": 2, "users_resumed": 0, "users_skipped": 0,
                                                             "users_failed": 0}
    assert tracker.named(user_id).nested and "val_accuracy" in tracker.named(user_id).metrics
    assert summary.fitted["user123"] == out / "user123.json"  # a plain id keeps its file name
    path = summary.fitted[user_id]
    assert path.parent == out and path != out / "user123.json" and not path.name.startswith(".")
    assert read_metadata(path)["user_id"] == user_id  # the id itself is kept as it is
    assert files_under(tmp_path) == sorted([data, out / "user123.json", path])
    assert [p for p in out.iterdir() if p.is_dir()] == []
    assert not (tmp_path.parent / "outside.json").exists()


def test_a_refit_resumes_every_user_from_the_same_files(offline_fit, tmp_path, user_with):
    users = ["user123", *(real_id(user_id, tmp_path) for user_id in HOSTILE)]
    data = write_pairs(tmp_path / "pairs.jsonl", users, user_with)
    out = tmp_path / "work" / "fitted"
    first = fit_users(data, out)
    again = fit_users(data, out)
    assert set(first.fitted) == set(users) and again.fitted == {} and again.resumed == first.fitted
    assert len(set(first.fitted.values())) == len(users)


def test_a_judge_planted_where_a_hostile_id_points_is_neither_read_nor_resumed(offline_fit, tmp_path, user_with):
    user_id = "../../outside"
    data = write_pairs(tmp_path / "pairs.jsonl", [user_id], user_with)
    out = tmp_path / "work" / "fitted"
    config = FitOptions().search_config(Settings(threads=1))  # all a fit here records
    planted = save_compiled(PreferenceJudge("planted"), out / f"{user_id}.json", program_name=PERSONAL_JUDGE,
                            user_id=user_id, data_digest=data_digest(data), model=Settings().task.model,
                            persona_prompt="uncompiled", optimizer=fit_settings(config, "one_order"), persona="planted")
    assert planted.resolve() == (tmp_path / "outside.json").resolve()
    summary = fit_users(data, out)
    assert summary.resumed == {} and summary.fitted[user_id].parent == out
    assert read_metadata(summary.fitted[user_id])["persona"] == f"persona of {user_id}"
    assert read_metadata(planted)["persona"] == "planted"  # left as it was


def test_ids_that_differ_only_in_unsafe_characters_get_files_of_their_own(offline_fit, tmp_path, user_with):
    users = ["a/b", "a\\b", "a:b", "a b", "a_b", "../x", "..\\x", "x" * 300, "x" * 299 + "y"]
    data = write_pairs(tmp_path / "pairs.jsonl", users, user_with)
    out = tmp_path / "work" / "fitted"
    summary = fit_users(data, out)
    assert set(summary.fitted) == set(users)
    assert len({path.name for path in summary.fitted.values()}) == len(users)
    assert summary.fitted["a_b"] == out / "a_b.json"
    for user_id, path in summary.fitted.items():
        assert path.parent == out and read_metadata(path)["persona"] == f"persona of {user_id}"


def test_evaluate_finds_each_hostile_users_judge_in_the_fitted_directory(offline_fit, offline, tmp_path, user_with):
    users = ["user123", *(real_id(user_id, tmp_path) for user_id in HOSTILE)]
    data = write_pairs(tmp_path / "pairs.jsonl", users, user_with)
    out = tmp_path / "work" / "fitted"
    fit_users(data, out)
    outcomes = evaluate_persona(data, out, tmp_path / "results")
    assert set(outcomes["persona"].report.per_user) == set(users)
    for user_id in users:
        assert f"persona of {user_id}" in offline[user_id][0]
    assert files_under(tmp_path / "results") == [tmp_path / "results" / "judgments-persona.jsonl"]


def test_a_file_holding_another_users_judge_is_not_used_for_this_user(offline_fit, offline, tmp_path, user_with):
    data = write_pairs(tmp_path / "pairs.jsonl", ["u1", "u2"], user_with)
    out = tmp_path / "work" / "fitted"
    fit_users(data, out)
    (out / "u1.json").replace(out / "u2.json")  # u2's file now holds u1's judge
    outcomes = evaluate_persona(data, out, tmp_path / "results")
    assert list(outcomes["persona"].report.per_user) == []
    summary = fit_users(data, out)
    assert set(summary.fitted) == {"u1", "u2"}  # u1 had no file; u2's held u1's judge
    assert read_metadata(out / "u2.json")["user_id"] == "u2"


def test_a_config_without_a_demo_cap_gets_the_small_model_profiles_when_it_is_on(offline_fit, tmp_path, user_with):
    data = write_pairs(tmp_path / "pairs.jsonl", ["u1"], user_with)
    fit_users(data, tmp_path / "on")
    off = Settings(threads=1, small_model=SmallModelProfile(enabled=False))
    fit_users(data, tmp_path / "off", off)
    fit_users(data, tmp_path / "given", off, max_demos=6)
    assert [config.max_demos for config in FakeFitter.configs] == [4, None, 6]


def test_the_fit_run_is_the_runners_with_the_params_a_resumed_fit_compares(offline_fit, tracker, tmp_path, user_with):
    data = write_pairs(tmp_path / "pairs.jsonl", ["u1", "u2"], user_with)
    fit_users(data, tmp_path / "fitted", max_demos=3)
    run = tracker.named("fit-synthesizeme")
    assert not run.nested and [child.name for child in tracker.runs[1:]] == ["u1", "u2"]
    config = FitOptions(max_demos=3).search_config(Settings(threads=1))
    assert {key: run.params[key] for key in ("program", "data", "data_digest", "users", "persona_prompt",
                                             "val_orders", "max_demos", "search", "task_model")} == {
        "program": PERSONAL_JUDGE, "data": str(data), "data_digest": data_digest(data), "users": 2,
        "persona_prompt": "uncompiled", "val_orders": "one_order", "max_demos": 3, "search": config.search,
        "task_model": Settings().task.model}


def test_the_demo_fits_and_judges_each_in_its_steps_run(offline_fit, offline, tracker, tmp_path, user_with):
    data = write_pairs(tmp_path / "pairs.jsonl", ["u1", "u2"], user_with)
    options = DemoOptions(data=str(data), fitted_dir=tmp_path / "fitted", output_dir=tmp_path / "results")
    outcome = run_step("synthesizeme", "demo", options, Settings(threads=1), emit=lambda line: None)
    assert set(outcome.fit.fitted) == {"u1", "u2"} and set(outcome.methods) == {"baseline", "synthesizeme"}
    assert [(run.name, run.nested) for run in tracker.runs] == [
        ("fit-synthesizeme", False), ("u1", True), ("u2", True), ("evaluate", False), ("u1", True), ("u2", True)]
    fitted, judged = (run for run in tracker.runs if not run.nested)
    assert (fitted.params["users"], fitted.params["search"]) == (2, "halving")
    assert fitted.metrics["users_fitted"] == 2
    assert (judged.params["methods"], judged.params["users"], judged.params["split"]) == ("baseline,synthesizeme", 2,
                                                                                            "test")
    assert judged.metrics["synthesizeme_users"] == 2 and len(judged.files) == 2
