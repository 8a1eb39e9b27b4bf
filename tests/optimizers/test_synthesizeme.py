"""SynthesizeMe's per-user fit: the split, the teleprompter's shape, Algorithm 1's steps and the options that depart
from it on scripted judges, then a real fit on the embedded model."""

import random

import dspy
import pytest
from dspy.teleprompt import Teleprompter
from dspy.utils.dummies import DummyLM

from prefcraft.engine.lm import build_adapter, build_lm
from prefcraft.errors import DataError
from prefcraft.loaders.personal_reward_bench import UserPairs, judge_examples, judge_set, train_val_split
from prefcraft.optimizers.artifacts import load_compiled, save_compiled
from prefcraft.optimizers.synthesizeme import SynthesizeMe, SynthesizeMeConfig, format_judgments
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.settings import SmallModelProfile

PERSONA_REPLY = {"reasoning": "They pick the short answers.", "persona": "Likes short, direct answers."}
SMALL_SEARCH = SynthesizeMeConfig(num_persona_subsets=10, num_demo_candidates=10, num_threads=1)
BOTH_ORDERS = SynthesizeMeConfig(num_persona_subsets=10, num_demo_candidates=10, num_threads=1,
                                 verification="both_orders", max_demos=4)


def always_second_lm() -> DummyLM:
    """A judge with the worst position bias: 'Second' whatever it is shown."""
    return DummyLM({
        "[[ ## past_judgments ## ]]": PERSONA_REPLY,
        "[[ ## second_completion ## ]]": {"reasoning": "The second one reads better.", "preference": "Second"},
    })


def oracle_lm(user: UserPairs) -> DummyLM:
    """A judge that picks the chosen response wherever it stands."""
    answers = {"[[ ## past_judgments ## ]]": PERSONA_REPLY}
    for pair in user.train + user.val + user.test:
        for position, label in (("first", "First"), ("second", "Second")):
            answers[f"[[ ## {position}_completion ## ]]\n{pair.chosen.content}"] = {
                "reasoning": "The user likes this one.", "preference": label}
    return DummyLM(answers)


def sets(user: UserPairs) -> dict[str, list[dspy.Example]]:
    return {"trainset": judge_set(user.train), "valset": judge_set(user.val)}


def orders(demos) -> list[str]:
    return sorted(demo["preference"] for demo in demos)


def is_balanced(demos) -> bool:
    firsts = sum(demo["preference"] == "First" for demo in demos)
    return abs(2 * firsts - len(demos)) <= 1


def test_a_user_with_fewer_than_two_context_pairs_is_refused_before_any_call(user_with):
    with pytest.raises(DataError, match="1 context pair"):
        train_val_split(user_with(train=1, val=0))


def test_identical_chosen_and_rejected_is_kept_as_the_reference_keeps_it(pair):
    same = pair(0, "train").model_copy(update={"rejected": pair(0, "train").chosen})
    user = UserPairs("u1", train=[same, pair(1, "train")], val=[pair(2, "val")])
    assert train_val_split(user) == ([same, pair(1, "train")], [pair(2, "val")])


@pytest.mark.parametrize(("n", "train"), [(2, 1), (3, 2), (4, 2), (5, 3), (7, 4), (8, 5), (10, 7), (11, 7), (14, 9)])
def test_without_a_val_split_the_first_int_seventy_percent_train_and_the_latest_validate(pair, n, train):
    pairs = [pair(i, "train") for i in range(n)]
    assert train_val_split(UserPairs("u1", train=pairs)) == (pairs[:train], pairs[train:])


def test_persona_evidence_is_formatted_with_reasoning_and_label(pair):
    trace = judge_examples(pair(0, "train"))[1].copy(reasoning="The short one is direct.")
    text = format_judgments([trace])
    assert "Judgment 1" in text and "The short one is direct." in text and "Preferred: Second" in text


def test_compile_returns_a_new_judge_with_its_record_and_leaves_the_student_as_it_was(user_with):
    user = user_with(train=4, val=2)
    student = PreferenceJudge()
    instructions = student.judge.predict.signature.instructions
    optimizer = SynthesizeMe(PersonaSynthesizer(), SMALL_SEARCH)
    with dspy.context(lm=oracle_lm(user)):
        judge = optimizer.compile(student, **sets(user))
    assert isinstance(optimizer, Teleprompter)
    assert judge is not student and student.demos == []
    assert student.judge.predict.signature.instructions == instructions
    record = judge.fit_record
    assert (record.user_id, record.train_pairs, record.val_pairs) == ("u1", 4, 2)
    assert record.persona == PERSONA_REPLY["persona"]
    persona_judge = PreferenceJudge(record.persona)
    assert judge.judge.predict.signature.instructions == persona_judge.judge.predict.signature.instructions


def test_a_student_with_instructions_of_its_own_is_refused_before_any_call(user_with):
    user = user_with(train=4, val=2)
    with dspy.context(lm=DummyLM([])), pytest.raises(ValueError, match="uncompiled PreferenceJudge"):
        SynthesizeMe(PersonaSynthesizer()).compile(PreferenceJudge("a persona"), **sets(user))


def test_an_empty_valset_is_refused_before_any_call(user_with):
    user = user_with(train=4, val=0)
    with dspy.context(lm=DummyLM([])), pytest.raises(DataError, match="valset: no judge examples"):
        SynthesizeMe(PersonaSynthesizer()).compile(PreferenceJudge(), **sets(user))


def test_a_train_pair_in_one_order_only_is_refused_before_any_call(user_with):
    user = user_with(train=4, val=2)
    trainset = judge_set(user.train)[1:]
    with dspy.context(lm=DummyLM([])), pytest.raises(DataError, match=r"1 pair\(s\) have only one order"):
        SynthesizeMe(PersonaSynthesizer()).compile(PreferenceJudge(), **{**sets(user), "trainset": trainset})


def test_by_default_each_train_pair_is_judged_once_and_kept_when_that_judgment_is_right(user_with):
    user = user_with(train=4, val=2)
    with dspy.context(lm=always_second_lm()):
        judge = SynthesizeMe(PersonaSynthesizer(), SMALL_SEARCH).compile(PreferenceJudge(), **sets(user))
    record = judge.fit_record
    assert record.usage["bootstrap"].calls == 4  # one order per pair, half of them with the chosen response first
    assert record.verified_pairs == 2  # the two shown with the chosen response second
    assert record.usage["persona_bootstrap"].calls == 4 and record.verified_with_persona == 2


def test_the_exact_search_fits_the_judge_the_exhaustive_one_fits_in_fewer_calls_and_says_why_each_stopped(
        user_with):
    user = user_with(train=4, val=2)
    fits = {}
    for search in ("exact", "exhaustive"):
        config = SynthesizeMeConfig(num_persona_subsets=10, num_demo_candidates=10, num_threads=1, search=search)
        with dspy.context(lm=always_second_lm()):
            fits[search] = SynthesizeMe(PersonaSynthesizer(), config).compile(PreferenceJudge(), **sets(user))
    exact, exhaustive = fits["exact"].fit_record, fits["exhaustive"].fit_record
    assert SynthesizeMeConfig().search == "exact"
    assert fits["exact"].demos == fits["exhaustive"].demos
    assert (exact.evidence_demos, exact.val_accuracy) == (exhaustive.evidence_demos, exhaustive.val_accuracy)
    for step, scores in (("persona_evidence", "subset_scores"), ("demo_search", "demo_scores")):
        assert exact.usage[step].calls < exhaustive.usage[step].calls == 4 * len(getattr(exhaustive, scores))
        assert all(score["stopped"] == "complete" and score["judged"] == 4 for score in getattr(exhaustive, scores))
    # Every candidate answers "Second": 2 of 4. The first is complete; each later one, asked first the judgments
    # the others got wrong, cannot beat it after two wrong answers (ties go to the earlier one).
    assert [(score["judged"], score["stopped"]) for score in exact.demo_scores] == (
        [(4, "complete")] + [(2, "cannot win")] * (len(exact.demo_scores) - 1))
    assert exact.demo_accuracies == [0.5] + [None] * (len(exact.demo_scores) - 1)


def test_step_three_bootstraps_the_train_pairs_again_with_the_persona_in_the_instructions(user_with):
    user = user_with(train=4, val=2)
    lm = oracle_lm(user)
    with dspy.context(lm=lm):
        judge = SynthesizeMe(PersonaSynthesizer(), SMALL_SEARCH).compile(PreferenceJudge(), **sets(user))
    train_contents = {pair.chosen.content for pair in user.train}
    with_persona = [entry for entry in lm.history
                    if PERSONA_REPLY["persona"] in entry["messages"][0]["content"]
                    and any(content in entry["messages"][-1]["content"] for content in train_contents)]
    assert len(with_persona) == judge.fit_record.usage["persona_bootstrap"].calls == 4
    assert judge.fit_record.verified_with_persona == 4


def test_step_three_can_reuse_the_step_one_traces_instead(user_with):
    user = user_with(train=4, val=2)
    config = SynthesizeMeConfig(num_persona_subsets=10, num_demo_candidates=10, num_threads=1,
                                step3_traces="from_step1")
    with dspy.context(lm=oracle_lm(user)):
        judge = SynthesizeMe(PersonaSynthesizer(), config).compile(PreferenceJudge(), **sets(user))
    record = judge.fit_record
    assert "persona_bootstrap" not in record.usage and record.verified_with_persona is None
    assert record.usage["bootstrap"].calls == 4


def test_a_demo_set_may_hold_every_verified_pair_and_is_topped_up_with_labeled_ones(user_with):
    user = user_with(train=8, val=2)
    optimizer = SynthesizeMe(PersonaSynthesizer(), SMALL_SEARCH)
    with dspy.context(lm=oracle_lm(user)):
        evidence = optimizer.collect_evidence(PreferenceJudge(), **sets(user))
    assert len(evidence.verified) == 8
    labeled, unshuffled, *random_sets = optimizer._candidate_demo_sets(
        evidence.train, evidence.verified, evidence.rng, 10)
    assert [demo.pair_id for demo in unshuffled] == [pair[0].pair_id for pair in evidence.train]
    assert all("reasoning" in demo for demo in unshuffled)
    assert len(labeled) == 4 and not any("reasoning" in demo for demo in labeled)
    for demos in random_sets:
        reasoned = sum("reasoning" in demo for demo in demos)
        assert len(demos) == max(reasoned, 4)  # fewer than 4 reasoned demos: labeled ones make up 4
    capped = SynthesizeMe(PersonaSynthesizer(), SynthesizeMeConfig(max_demos=4))
    assert all(len(demos) <= 4 for demos in capped._candidate_demo_sets(
        evidence.train, evidence.verified, evidence.rng, 10))


def test_candidate_sets_are_the_reference_codes_draws_labeled_only_first(user_with):
    """Seed -2: LabeledFewShot's sample by random.Random(0); -1: BootstrapFewShot on the train list; seed s: on the
    list shuffled by random.Random(s), with random.Random(s).randint(1, n) bootstrapped demos. BootstrapFewShot keeps
    the first verified pairs in its list's order and tops them up to 4 with the rest, shuffled by random.Random(0) and
    sampled by another."""
    train = [(example,) for example in judge_set(user_with(train=9, val=1).train)[::2]]
    traced = {example.pair_id: example.copy(reasoning="Why.") for (example,) in train[1::3]}  # 3 pairs verified

    def bootstrap_few_shot(trainset, max_bootstrapped):
        bootstrapped = [index for index, (example,) in enumerate(trainset) if example.pair_id in traced]
        bootstrapped = bootstrapped[:max_bootstrapped]
        unbootstrapped = [pair for index, pair in enumerate(trainset) if index not in bootstrapped]
        random.Random(0).shuffle(unbootstrapped)
        raw = random.Random(0).sample(unbootstrapped, min(4 - len(bootstrapped), len(unbootstrapped)))
        return [traced[trainset[index][0].pair_id] for index in bootstrapped] + [example for (example,) in raw]

    expected = [[example for (example,) in random.Random(0).sample(train, 4)], bootstrap_few_shot(train, 9)]
    for seed in range(10):
        shuffled = list(train)
        random.Random(seed).shuffle(shuffled)
        expected.append(bootstrap_few_shot(shuffled, random.Random(seed).randint(1, 9)))
    unique = [demos for index, demos in enumerate(expected) if demos not in expected[:index]]
    assert len(unique) == 11  # seeds 4 and 5 draw the same set, in the same order: it is scored once
    optimizer = SynthesizeMe(PersonaSynthesizer(), SMALL_SEARCH)
    verified = [(example,) for example in traced.values()]
    candidates = optimizer._candidate_demo_sets(train, verified, random.Random(123), 10)
    assert candidates == unique
    assert optimizer._candidate_demo_sets(train, verified, random.Random(7), 10) == candidates  # seed-free
    assert candidates[0] != [example for (example,) in train[:4]]  # a sample, not the first four
    assert not any("reasoning" in demo for demo in candidates[0])
    assert ["reasoning" in demo for demo in candidates[1]] == [True, True, True, False]


def test_with_both_orders_a_judge_that_always_answers_second_verifies_no_pair_and_learns_from_balanced_labels(
        user_with):
    user = user_with(train=4, val=2)
    with dspy.context(lm=always_second_lm()):
        judge = SynthesizeMe(PersonaSynthesizer(), BOTH_ORDERS).compile(PreferenceJudge(), **sets(user))
    record = judge.fit_record
    assert record.usage["bootstrap"].calls == 8  # every train pair in both orders
    assert record.verified_pairs == 0
    assert orders(record.evidence_demos) == ["First", "First", "Second", "Second"]
    assert all("reasoning" not in demo for demo in record.evidence_demos)  # labeled only
    assert is_balanced(judge.demos)


def test_with_both_orders_every_candidate_demo_set_shows_as_many_chosen_first_as_second(user_with):
    user = user_with(train=8, val=2)
    optimizer = SynthesizeMe(PersonaSynthesizer(), BOTH_ORDERS)
    with dspy.context(lm=oracle_lm(user)):
        evidence = optimizer.collect_evidence(PreferenceJudge(), **sets(user))
    assert len(evidence.verified) == 8
    assert is_balanced(evidence.evidence)
    candidates = optimizer._candidate_demo_sets(evidence.train, evidence.verified, evidence.rng, 10)
    assert len(candidates) == 12  # the labeled-only and the unshuffled sets, then 10 random ones, as the reference's
    assert all(is_balanced(demos) for demos in candidates)
    assert [orders(demos) for demos in candidates[:2]] == [["First", "First", "Second", "Second"]] * 2


@pytest.mark.server
def test_real_fit_saves_a_judge_that_loads_back_and_predicts_identically(embedded_model, tmp_path, pair, user_with):
    config = SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2, num_threads=2)
    user = user_with(train=4, val=2)
    with dspy.context(lm=build_lm(embedded_model), adapter=build_adapter(embedded_model, SmallModelProfile())):
        train, val = train_val_split(user)
        judge = SynthesizeMe(PersonaSynthesizer(), config).compile(
            PreferenceJudge(), trainset=judge_set(train), valset=judge_set(val)
        )
        record = judge.fit_record
        assert record.train_pairs == 4 and record.val_pairs == 2
        assert record.persona.strip()
        assert record.persona in judge.judge.predict.signature.instructions
        assert 0.0 <= record.val_accuracy <= 1.0
        assert record.usage["bootstrap"].calls == 4  # each train pair judged once, nothing else
        assert record.usage["persona_bootstrap"].calls == 4
        assert record.usage["persona"].calls == 1
        assert len(record.subset_accuracies) <= config.num_persona_subsets + 2
        assert len(record.demo_accuracies) <= config.num_demo_candidates + 3

        path = save_compiled(judge, tmp_path / "u1.json", program_name="personal_judge", persona=record.persona)
        loaded = PreferenceJudge()
        assert load_compiled(loaded, path, program_name="personal_judge")["persona"] == record.persona
        example = judge_examples(pair(7, "test"))[0]
        assert loaded(**example.inputs()).preference == judge(**example.inputs()).preference
