"""Resuming a fit: a fitted file is reused only when nothing that changes a fit has changed."""

from prefcraft.components.synthesizeme.fit import PERSONAL_JUDGE, _refit_reason, demo_cap, fit_settings
from prefcraft.loaders.personal_reward_bench import VAL_FRACTION
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.settings import Settings, SmallModelProfile


def fitted_file(tmp_path, config: SynthesizeMeConfig):
    metadata = {"data_digest": "abc", "model": "hosted_vllm/m", "persona_prompt": "p.json",
                "optimizer": fit_settings(config, "one_order")}
    path = save_compiled(PreferenceJudge("persona"), tmp_path / "u1.json", program_name=PERSONAL_JUDGE, **metadata)
    return path, metadata


def test_an_unchanged_fit_is_reused(tmp_path):
    path, metadata = fitted_file(tmp_path, SynthesizeMeConfig())
    assert _refit_reason(path, metadata) is None


def test_threads_do_not_force_a_refit(tmp_path):
    path, metadata = fitted_file(tmp_path, SynthesizeMeConfig(num_threads=4))
    settings = fit_settings(SynthesizeMeConfig(num_threads=1), "one_order")
    assert _refit_reason(path, {**metadata, "optimizer": settings}) is None


def test_scoring_the_candidates_in_both_orders_forces_a_refit(tmp_path):
    path, metadata = fitted_file(tmp_path, SynthesizeMeConfig())
    settings = fit_settings(SynthesizeMeConfig(), "both_orders")
    assert "validation" in _refit_reason(path, {**metadata, "optimizer": settings})


def test_every_setting_that_changes_a_fit_is_named(tmp_path):
    path, metadata = fitted_file(tmp_path, SynthesizeMeConfig())
    changes = ({"search": "halving"}, {"search": "exhaustive"}, {"num_persona_subsets": 3}, {"num_demo_candidates": 3},
               {"seed": 1}, {"max_demos": 7}, {"verification": "both_orders"}, {"step3_traces": "from_step1"})
    for change in changes:
        expected = {**metadata, "optimizer": fit_settings(SynthesizeMeConfig(**change), "one_order")}
        reason = _refit_reason(path, expected)
        assert reason is not None and "optimizer" in reason and str(next(iter(change.values()))) in reason
    reason = _refit_reason(path, {**metadata, "persona_prompt": "other.json"})
    assert reason == "changed persona_prompt 'p.json' -> 'other.json'"
    assert "data_digest" in _refit_reason(path, {**metadata, "data_digest": "def"})


def test_a_judge_fitted_before_the_steps_followed_the_paper_is_fitted_again(tmp_path):
    settings = fit_settings(SynthesizeMeConfig(), "one_order")
    assert settings["val_fraction"] == VAL_FRACTION == 0.3
    assert (settings["verification"], settings["step3_traces"], settings["search"]) == (
        "one_order", "bootstrap_with_persona", "exact")
    before = {**{name: value for name, value in settings.items() if name not in ("verification", "step3_traces")},
              "demo_orders": "balanced", "search": "halving", "max_demos": 4}
    path, metadata = fitted_file(tmp_path, SynthesizeMeConfig())
    path = save_compiled(PreferenceJudge("persona"), path, program_name=PERSONAL_JUDGE,
                         **{**metadata, "optimizer": before})
    assert "'verification': 'one_order'" in _refit_reason(path, metadata)


def test_a_judge_fitted_from_candidate_sets_drawn_otherwise_is_fitted_again(tmp_path):
    path, metadata = fitted_file(tmp_path, SynthesizeMeConfig())
    before = {name: value for name, value in metadata["optimizer"].items() if name != "candidate_draws"}
    path = save_compiled(PreferenceJudge("persona"), path, program_name=PERSONAL_JUDGE,
                         **{**metadata, "optimizer": before})
    assert "'candidate_draws': 'reference_seeds'" in _refit_reason(path, metadata)


def test_the_small_model_profile_caps_the_demos_unless_a_cap_is_given():
    assert demo_cap(Settings()) == SmallModelProfile().max_demos == 4  # the embedded default turns the profile on
    assert demo_cap(Settings(small_model=SmallModelProfile(enabled=False))) is None  # the paper: no cap
    assert demo_cap(Settings(small_model=SmallModelProfile(enabled=False)), 6) == 6
    assert demo_cap(Settings(), 2) == 2


def test_a_missing_or_unreadable_file_is_fitted(tmp_path):
    assert _refit_reason(tmp_path / "none.json", {}) == "not fitted yet"
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    assert _refit_reason(broken, {}).startswith("unreadable")
