"""What a fit and an evaluation read, without a model server: the benchmark's test users by default (its Table 3), each
pair in the order its data row shows it, and the Memory baseline's conversations alone."""

import json

import datasets
import dspy
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dspy.utils.dummies import DummyLM

from prefcraft.components.synthesizeme.evaluation import load_users, memory_interactions
from prefcraft.components.synthesizeme.judge_sets import fit_sets, row_orders
from prefcraft.components.synthesizeme.options import EvaluateOptions, FitOptions
from prefcraft.errors import ConfigError
from prefcraft.optimizers.synthesizeme import SynthesizeMe, SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.memory import MemoryBuilder
from prefcraft.programs.persona import PersonaSynthesizer

HUB_SPLITS = {"train": "u_train", "validation": "u_val", "test": "u_test"}  # split file (as the hub names it): user


def rows(user_with, user_id):
    user = user_with(2, 1, user_id=user_id)
    return [pair.model_dump() for pair in user.train + user.val + user.test]


@pytest.fixture
def hub_folder(tmp_path, user_with, monkeypatch):
    """A local copy of a PersonalRewardBench dataset as the hub stores it: one Parquet file per user split."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "prism" / "data"
    folder.mkdir(parents=True)
    for split, user_id in HUB_SPLITS.items():
        pq.write_table(pa.Table.from_pylist(rows(user_with, user_id)), folder / f"{split}-00000-of-00001.parquet")
    return folder.parent


def test_a_dataset_is_read_for_its_test_users_by_default_and_another_population_on_request(hub_folder):
    assert list(load_users(FitOptions(data=str(hub_folder)))) == ["u_test"]
    assert list(load_users(EvaluateOptions(data=str(hub_folder), population="val"))) == ["u_val"]
    assert sorted(load_users(FitOptions(data=str(hub_folder), population="all"))) == sorted(HUB_SPLITS.values())


def test_a_single_file_is_read_whole_and_cannot_be_split_by_population(tmp_path, user_with):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for user_id in ("a", "b") for row in rows(user_with, user_id)))
    assert list(load_users(EvaluateOptions(data=str(path)))) == ["a", "b"]
    assert list(load_users(FitOptions())) == [f"sample_user_{i:02d}" for i in range(1, 13)]  # the bundled sample
    with pytest.raises(ConfigError, match="single file") as caught:
        load_users(FitOptions(data=str(path), population="train"))
    assert "split files" in caught.value.hint


def test_pairs_are_shown_in_their_rows_order_and_validated_in_it_or_in_both(user_with):
    user = user_with(4, 3)
    flips = [True, False, None, None]
    train = [pair.model_copy(update={"flip": flip}) for pair, flip in zip(user.train, flips, strict=True)]
    orders = row_orders(train, seed=0)
    assert orders[:2] == ["chosen_first", "chosen_second"] and sorted(orders[2:]) == ["chosen_first", "chosen_second"]
    trainset, valset = fit_sets(train, user.val, "one_order", seed=0)
    assert len(trainset) == 8 and [example.row_order for example in trainset[::2]] == orders
    assert len(valset) == 3 and len({example.pair_id for example in valset}) == 3
    assert len(fit_sets(train, user.val, "both_orders", seed=0)[1]) == 6


@pytest.mark.parametrize(("flip", "verified"), [(True, 0), (False, 4)])
def test_step_one_judges_each_train_pair_in_its_rows_order(user_with, flip, verified):
    user = user_with(4, 2)
    train = [pair.model_copy(update={"flip": flip}) for pair in user.train]
    trainset, valset = fit_sets(train, user.val, "one_order", seed=0)
    always_second = DummyLM({"[[ ## second_completion ## ]]": {"reasoning": "Reads better.", "preference": "Second"}})
    config = SynthesizeMeConfig(num_persona_subsets=2, num_threads=1)
    with dspy.context(lm=always_second):
        evidence = SynthesizeMe(PersonaSynthesizer(), config).collect_evidence(
            PreferenceJudge(), trainset=trainset, valset=valset)
    assert evidence.usage["bootstrap"].calls == 4 and len(evidence.verified) == verified
    assert {example.order for (example,) in evidence.train} == {"chosen_first" if flip else "chosen_second"}
    assert evidence.subset_scores[0]["total"] == 2  # each validation pair once


def test_the_memory_reads_each_conversation_alone_and_keeps_no_empty_answer(user_with):
    user = user_with(2, 1)
    interactions = memory_interactions(user)
    assert [set(interaction) for interaction in interactions] == [{"conversation"}] * 3
    replies = [{"insights": "- Likes short answers.\n- Reads on a phone."}, {"insights": "No insights found."},
               {"insights": "no insights found"}]
    with dspy.context(lm=DummyLM(replies)):
        memory = MemoryBuilder()(interactions=interactions)
    assert memory.insights == ["Likes short answers.", "Reads on a phone."]
