"""SynthesizeMe's per-user fit: bad input without LM calls, then a real fit on the embedded model."""

import dspy
import pytest
from prefcraft.optimizers.artifacts import load_compiled, save_compiled
from prefcraft.optimizers.synthesizeme import SynthesizeMe, SynthesizeMeConfig, format_judgments
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer

from prefcraft.errors import DataError
from prefcraft.lm import build_adapter, build_lm
from prefcraft.loaders.personal_reward_bench import UserPairs, judge_examples


def test_a_user_with_fewer_than_two_context_pairs_is_refused_before_any_call(user_with):
    with pytest.raises(DataError, match="1 context pair"):
        SynthesizeMe(PersonaSynthesizer()).fit(user_with(train=1, val=0))


def test_identical_chosen_and_rejected_is_refused(pair):
    broken = pair(0, "train").model_copy(update={"rejected": pair(0, "train").chosen})
    user = UserPairs("u1", train=[broken, pair(1, "train")], val=[pair(2, "val")])
    with pytest.raises(DataError, match="identical chosen and rejected"):
        SynthesizeMe(PersonaSynthesizer()).fit(user)


def test_without_a_val_split_the_latest_pairs_validate(pair):
    pairs = [pair(i, "train") for i in range(10)]
    train, val = SynthesizeMe(PersonaSynthesizer())._split(UserPairs("u1", train=pairs))
    assert train == pairs[:7] and val == pairs[7:]


def test_persona_evidence_is_formatted_with_reasoning_and_label(pair):
    trace = judge_examples(pair(0, "train"))[1].copy(reasoning="The short one is direct.")
    text = format_judgments([trace])
    assert "Judgment 1" in text and "The short one is direct." in text and "Preferred: Second" in text


@pytest.mark.server
def test_real_fit_saves_a_judge_that_loads_back_and_predicts_identically(embedded_model, tmp_path, pair, user_with):
    config = SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2, num_threads=2)
    user = user_with(train=4, val=2)
    with dspy.context(lm=build_lm(embedded_model), adapter=build_adapter(embedded_model)):
        judge, record = SynthesizeMe(PersonaSynthesizer(), config).fit(user)
        assert record.train_pairs == 4 and record.val_pairs == 2
        assert record.persona.strip()
        assert record.persona in judge.judge.predict.signature.instructions
        assert 0.0 <= record.val_accuracy <= 1.0
        assert len(judge.demos) <= config.max_demos
        assert record.usage["bootstrap"].calls == 4  # each train pair judged once, nothing else in that step
        assert record.usage["persona"].calls == 1
        assert len(record.subset_accuracies) <= config.num_persona_subsets
        assert len(record.demo_accuracies) <= config.num_demo_candidates + 1

        path = save_compiled(judge, tmp_path / "u1.json", program_name="personal_judge", persona=record.persona)
        loaded = PreferenceJudge()
        assert load_compiled(loaded, path, program_name="personal_judge")["persona"] == record.persona
        example = judge_examples(pair(7, "test"))[0]
        assert loaded(**example.inputs()).preference == judge(**example.inputs()).preference
